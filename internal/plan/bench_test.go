package plan

import (
	"context"
	"runtime"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// BenchmarkPlanThreeClasses plans docs/examples/three-classes.yaml with the
// default 20,000 Monte Carlo draws as a scenario with a new demand or SLO:
// the min_pool and percentile caches are emptied before each plan, while
// the draws and the service-time tails come from their caches.
func BenchmarkPlanThreeClasses(b *testing.B) {
	s := example(b, "three-classes")
	e := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		e.percentiles.Purge()
		e.minPools.Purge()
		if _, err := e.plan(context.Background(), s, true, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanThreeClassesQuotas varies only the key's tokens-per-minute
// limit, as a what-if sweep of quotas does: min_pool and the percentiles
// come from their caches, so what is left is the quota arithmetic.
func BenchmarkPlanThreeClassesQuotas(b *testing.B) {
	variants := make([]scenario.Scenario, 1000)
	for i := range variants {
		variants[i] = mutable(example(b, "three-classes"))
		variants[i].Quotas[0].TPM = 1_000_000 + float64(i)*2000
	}
	e := New(Options{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := e.plan(context.Background(), variants[i%len(variants)], true, nil); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPlanThreeClassesRepeated is the same scenario through
// Engine.Plan, answered from the plan cache: the cost of a repeated request.
func BenchmarkPlanThreeClassesRepeated(b *testing.B) {
	s := example(b, "three-classes")
	e := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Plan(context.Background(), s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanThreeClassesCold is the same plan with every cache but the
// draws emptied before each plan: the cost of service times never seen
// before (new latency or token distributions).
func BenchmarkPlanThreeClassesCold(b *testing.B) {
	s := example(b, "three-classes")
	e := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		e.tails.Purge()
		e.samples.Purge()
		e.percentiles.Purge()
		e.minPools.Purge()
		if _, err := e.plan(context.Background(), s, true, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanMeasuredCurve plans docs/examples/measured-curve.yaml, whose
// latency depends on the endpoint's load, with every cache but the draws
// emptied before each plan.
func BenchmarkPlanMeasuredCurve(b *testing.B) {
	s := example(b, "measured-curve")
	e := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		e.tails.Purge()
		e.samples.Purge()
		e.percentiles.Purge()
		e.minPools.Purge()
		if _, err := e.plan(context.Background(), s, true, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRepeatedPlansDoNotGrowMemory plans many scenarios, varied so that the
// caches churn, and checks that the live heap stays bounded.
func TestRepeatedPlansDoNotGrowMemory(t *testing.T) {
	s := example(t, "three-classes")
	e := New(Options{})
	plan := func(i int) {
		v := mutable(s)
		p50 := 300 + float64(i%40)
		v.Latency.TTFTMs.P50 = &p50 // a new service time: a cache miss
		if _, err := e.Plan(context.Background(), v); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		plan(i)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for i := range 200 {
		plan(i)
	}
	if after := heap(); after > before+8<<20 {
		t.Fatalf("live heap grew from %d to %d bytes over 200 plans", before, after)
	}
}

// TestCachesAreBoundedByBytes plans scenarios of the largest number of
// Monte Carlo draws, each with its own seed and service times, so that
// every plan draws, samples and caches afresh: the caches' estimated size
// stays within their bounds, and the live heap grows by less than the
// draws and samples of these plans would take if counts alone bounded
// them.
func TestCachesAreBoundedByBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("plans with 200,000 draws")
	}
	e := New(Options{})
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	const bound = drawCacheBytes + tailCacheBytes + sampleCacheBytes + 2*planCacheBytes
	for i := range 8 {
		s := mutable(example(t, "three-classes"))
		seed := uint64(100 + i)
		s.Policy.Seed, s.Policy.MonteCarloDraws = &seed, 200000
		p50 := 300 + float64(i)
		s.Latency.TTFTMs.P50 = &p50
		if _, err := e.Plan(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if n := e.CacheBytes(); n > bound {
			t.Fatalf("after %d plans the caches hold %d bytes, more than their bound of %d", i+1, n, bound)
		}
	}
	// Each plan's draws take 18.4 MB and its samples 1.6 MB a part: 8
	// plans, with entries bounded by count, kept about 100 MB of them.
	grown := heap() - before
	runtime.KeepAlive(e) // the engine and its caches are what is measured
	if grown > 72<<20 {
		t.Fatalf("the live heap grew by %d MB over 8 plans of 200,000 draws", grown>>20)
	}
}
