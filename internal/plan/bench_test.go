package plan

import (
	"context"
	"runtime"
	"testing"
)

// BenchmarkPlanThreeClasses plans docs/examples/three-classes.yaml with the
// default 20,000 Monte Carlo draws, bypassing the plan cache: the draws and
// the service-time tails are reused from their caches, as for a scenario
// that differs from recent ones only in quotas, demand or SLOs.
func BenchmarkPlanThreeClasses(b *testing.B) {
	s := example(b, "three-classes")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := computeContext(context.Background(), s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanThreeClassesRepeated is the same scenario through Compute,
// answered from the plan cache: the cost of a repeated request.
func BenchmarkPlanThreeClassesRepeated(b *testing.B) {
	s := example(b, "three-classes")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compute(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanThreeClassesCold is the same plan with the tail cache emptied
// before each plan: the cost of a scenario never seen before.
func BenchmarkPlanThreeClassesCold(b *testing.B) {
	s := example(b, "three-classes")
	b.ReportAllocs()
	for b.Loop() {
		tailCache.Purge()
		if _, err := computeContext(context.Background(), s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanMeasuredCurve plans docs/examples/measured-curve.yaml, whose
// latency depends on the pool, so that every candidate pool needs its own
// Monte Carlo sample.
func BenchmarkPlanMeasuredCurve(b *testing.B) {
	s := example(b, "measured-curve")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := computeContext(context.Background(), s); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRepeatedPlansDoNotGrowMemory plans many scenarios, varied so that the
// caches churn, and checks that the live heap stays bounded.
func TestRepeatedPlansDoNotGrowMemory(t *testing.T) {
	s := example(t, "three-classes")
	plan := func(i int) {
		v := mutable(s)
		p50 := 300 + float64(i%40)
		v.Latency.TTFTMs.P50 = &p50 // a new service time: a cache miss
		if _, err := Compute(v); err != nil {
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
