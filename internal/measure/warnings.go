package measure

import (
	"fmt"
	"strings"
)

// Warnings are what an operator must know of a probe's run beyond its
// verdicts, each starting with "WARNING": answers that named another
// model than the one asked (Served), and steps whose measured requests
// mostly opened a new connection (ConnStats.NotReused). A probe adds
// them to its notes; the verdict lines and the record card show them.
func (r Result) Warnings() []string {
	var out []string
	if r.Served.Switched() {
		out = append(out, r.Served.Sentence()+`: the endpoint served another model than the one asked for (docs/probe.md, "The served model")`)
	}
	var steps []string
	for _, s := range r.Steps {
		if c := s.Connections; c.NotReused() {
			steps = append(steps, fmt.Sprintf("%d (%d of %d)", s.Concurrency, c.NewMeasured, c.Measured))
		}
	}
	if len(steps) > 0 {
		w := "WARNING: connections were not reused: measured requests that opened a new connection after the warm-up, at concurrency " + strings.Join(steps, ", ")
		if c := r.Connections; c != nil && c.SetupMeanMs > 0 {
			w += fmt.Sprintf("; a new connection took %.1f ms to set up", c.SetupMeanMs)
		}
		out = append(out, w+`. The endpoint, or a proxy in front of it, closes connections (Connection: close, a short keep-alive), and each request pays the set-up in its TTFT (docs/probe.md, "Connections")`)
	}
	return out
}
