package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/scenario"
)

// latencyBlock converts the analysis into a scenario latency block that
// passes scenario validation, or returns nil with the reason in the notes.
// A curve point needs a known concurrency, and one concurrency appears once
// (the first step of that concurrency, the lowest rate, is kept). The knee
// is the analysis's (none for a ramp of one concurrency). Without any
// curve point (a ramp with no TTFT) the block holds the knee alone, to
// sit beside ttft_ms and tpot_ms.
func latencyBlock(res measure.Result) (*scenario.Latency, []string) {
	knee := res.Knee
	if knee != nil && *knee < 1 {
		knee = nil
	}
	var notes []string
	seen, timed := map[int]bool{}, false
	for _, s := range res.Steps {
		switch {
		case s.TTFTP50Ms <= 0 || s.TPOTP50Ms <= 0:
		case s.Concurrency < 1:
			timed = true
			notes = append(notes, "a step of unknown concurrency is left out of the latency curve")
		case seen[s.Concurrency]:
			notes = append(notes, fmt.Sprintf("several steps estimate concurrency %d: the latency curve keeps the first (lowest rate)", s.Concurrency))
		default:
			seen[s.Concurrency] = true
		}
	}
	l, err := analysis.Latency(res)
	if err != nil && timed && len(seen) == 0 {
		return nil, append(notes, "no latency block: no step with TTFT and TPOT has a known concurrency")
	}
	if err != nil {
		if knee != nil {
			return &scenario.Latency{Knee: knee}, []string{"the latency block holds the knee only (" + err.Error() + "): give ttft_ms and tpot_ms beside it"}
		}
		return nil, []string{"no latency block: " + err.Error()}
	}
	l.Knee = knee
	if err := validLatency(l); err != nil {
		return nil, append(notes, "no latency block: "+err.Error())
	}
	return &l, notes
}

// validLatency checks the block with the scenario's own validation, inside
// the smallest scenario that has one quota and one class.
func validLatency(l scenario.Latency) error {
	doc := map[string]any{
		"quotas":  []any{map[string]any{"name": "q", "rpm": 1}},
		"latency": l,
		"classes": []any{map[string]any{
			"name": "c", "quota": "q", "mode": "batch",
			"input_tokens": map[string]any{"fixed": 1}, "output_tokens": map[string]any{"fixed": 1},
		}},
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode latency block: %w", err)
	}
	_, err = scenario.Parse(js)
	var fes scenario.Errors
	if !errors.As(err, &fes) {
		return err
	}
	var msgs []string
	for _, fe := range fes {
		if strings.HasPrefix(fe.Path, "latency") {
			msgs = append(msgs, fe.Error())
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("the measured curve does not validate: %s", strings.Join(msgs, "; "))
	}
	return nil
}
