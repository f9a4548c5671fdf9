//go:build !race

package app

import (
	"context"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/simulate"
)

// TestSupportChatPacing: the support chat (2 req/s of long prompts on a
// key of 450,000 TPM counting max_tokens, TTFT p95 ≤ 2.5 s) waits for the
// key's bucket, and the plan says how long: a window of 1 s holds 6,750
// tokens, about three requests' charges, so sends wait for tokens; one of
// 10 s holds ten times that, and they wait less. The plan fits at both and
// the simulation of it holds.
func TestSupportChatPacing(t *testing.T) {
	a := New(plan.New(plan.Options{}))
	ctx := context.Background()
	var waits [2]float64
	for i, w := range []string{"1", "10"} {
		sc := parse(t, fill(supportChatTemplate, "WINDOW", w, "RATE", "2", "SCV", "1", "ACCOUNTING", "max_tokens"))
		p, err := a.Plan(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		c := p.Classes[0]
		if !c.Feasible || c.Pool < *c.MinPool {
			t.Fatalf("window %s s: pool %d, min_pool %d, feasible %v", w, c.Pool, *c.MinPool, c.Feasible)
		}
		// No pacing wait is left out of the plan.
		pacingMean := 0.0
		if c.Predicted.PacingWaitP95Ms != nil {
			waits[i], pacingMean = *c.Predicted.PacingWaitP95Ms, *c.Predicted.PacingWaitMeanMs
		}
		if k := p.Quotas[0].Pacing; len(k) != 2 || k[1].Dimension != "tpm" || k[1].RatePerS != 6750 || k[1].Capacity != 6750*float64(sc.Quotas[0].BurstWindowS) {
			t.Errorf("window %s s: the key's buckets %+v, want tpm at 6,750 tokens/s holding %s s of it", w, k, w)
		}
		// The pacing wait is part of the queue wait and of TTFT.
		if *c.Predicted.QueueWaitMeanMs < pacingMean || *c.Predicted.TTFTP95Ms > 2500 {
			t.Errorf("window %s s: queue wait mean %v ms below the pacing wait's %v, or TTFT p95 %v ms over 2,500", w, *c.Predicted.QueueWaitMeanMs, pacingMean, *c.Predicted.TTFTP95Ms)
		}
		seed := uint64(1)
		r, err := a.Simulate(ctx, sc, simulate.Options{DurationS: 3600, Seed: &seed})
		if err != nil {
			t.Fatal(err)
		}
		if s := r.Classes[0]; !s.Verdict.Holds {
			t.Errorf("window %s s: the plan fits and its simulation does not hold: %+v", w, s.Verdict)
		}
	}
	// Both are the plan's, and the window changes them.
	if !(waits[0] > 200 && waits[1] < waits[0]/2) {
		t.Errorf("pacing wait p95 %.0f ms with a window of 1 s, %.0f ms with 10 s: want a wait at 1 s and less than half of it at 10 s", waits[0], waits[1])
	}
}

// TestNightlyBatchBesideTheChat: a nightly batch of 8,000 documents in
// 6 h on the support chat's key gets a pool that finishes it in its window,
// under priority and weighted allocation, and the chat keeps its min_pool:
// the chat reserves what its demand uses, not what its min_pool would use
// flat out. The simulation of 6 h completes the batch and both hold.
func TestNightlyBatchBesideTheChat(t *testing.T) {
	a := New(plan.New(plan.Options{}))
	ctx := context.Background()
	for _, alloc := range []string{"priority", "weighted"} {
		sc := parse(t, fill(supportChatTemplate, "WINDOW", "1", "RATE", "2", "SCV", "1", "ACCOUNTING", "max_tokens")+nightly+"policy: {allocation: "+alloc+"}\n")
		p, err := a.Plan(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		chat, batch := p.Classes[0], p.Classes[1]
		if !chat.Feasible || chat.Pool < *chat.MinPool {
			t.Errorf("%s: chat pool %d below its min_pool %v, or does not fit", alloc, chat.Pool, *chat.MinPool)
		}
		if batch.Pool < 1 || !batch.Feasible || batch.Batch == nil || !batch.Batch.MeetsWindow || *batch.Batch.CompletionHours > 6 {
			t.Fatalf("%s: nightly pool %d, feasible %v, batch %+v", alloc, batch.Pool, batch.Feasible, batch.Batch)
		}
		seed := uint64(1)
		r, err := a.Simulate(ctx, sc, simulate.Options{DurationS: 6 * 3600, Seed: &seed})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Classes {
			if !c.Verdict.Holds {
				t.Errorf("%s: %s does not hold in the simulation: %+v", alloc, c.Name, c.Verdict)
			}
		}
		if s := r.Classes[1].Simulated; s.Completed < 7800 || s.Backlog > 10 {
			t.Errorf("%s: the simulation completed %d of the batch's %d arrivals in 6 h, %d left waiting", alloc, s.Completed, s.Requests, s.Backlog)
		}
	}
}
