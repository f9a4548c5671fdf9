package analysis

import (
	"math/rand/v2"

	"github.com/plannerdev/planner/internal/measure"
)

func newTestRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

// closedLoop simulates a closed-loop step: c workers opening evenly over
// spread seconds share n requests, each sending its next as soon as its
// last ends; service times come from draw (seconds). The first warm
// requests sent are warm-up.
func closedLoop(c, n, warm int, spread float64, draw func() float64) []measure.Record {
	free := make([]float64, c)
	for j := range free {
		free[j] = spread * float64(j) / float64(c)
	}
	recs := make([]measure.Record, 0, n)
	for idx := range n {
		j := 0
		for k := range free {
			if free[k] < free[j] {
				j = k
			}
		}
		s := draw()
		recs = append(recs, measure.Record{Step: c, Index: idx, StartS: free[j], TTFTMs: 50, E2EMs: s * 1000,
			OutputTokens: 10, Status: 200, OK: true, Attempts: 1, Warmup: idx < warm})
		free[j] += s
	}
	return recs
}
