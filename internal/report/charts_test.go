package report

import (
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/report/reportcheck"

	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
)

// fill is how gonum's SVG writer spells a fill colour.
const (
	fillBinding = "fill:#C0392B"
	fillOther   = "fill:#1F5F9E"
)

func TestCeilingsSVG(t *testing.T) {
	_, measured := examplePlan(t, "measured-curve")
	_, chat := examplePlan(t, "chat")
	_, infeasible := examplePlan(t, "daily-limit-batch")
	tests := []struct {
		name      string
		class     plan.ClassPlan
		texts     []string // drawn
		absent    []string // not drawn
		otherBars int      // bars in the other colour
	}{
		{
			name:      "quota binds, policy cap off scale",
			class:     chat.Classes[0],
			texts:     []string{"39 (binds)", "174", "unbounded", "1,000, off scale", "rpm", "tpm", "slo_ttft", "slo_e2e", "policy_cap"},
			otherBars: 2,
		},
		{
			name:      "knee binds, rpm unbounded",
			class:     measured.Classes[1],
			texts:     []string{"4 (binds)", "unbounded", "1,000, off scale", "knee", "rpm"},
			otherBars: 1,
		},
		{
			name:  "infeasible class",
			class: infeasible.Classes[0],
			texts: []string{fmt.Sprintf("%d (binds)", infeasible.Classes[0].Pool), infeasible.Classes[0].BindingConstraint},
		},
		{
			name: "tie",
			class: plan.ClassPlan{Name: "t", Pool: 8, BindingConstraint: "rpm", TiedConstraints: []string{"tpm"},
				Ceilings: []plan.Ceiling{{Constraint: "rpm", MaxPool: ptr(8)}, {Constraint: "tpm", MaxPool: ptr(8)}, {Constraint: "knee"}}},
			texts:     []string{"8 (binds)", "8 (ties)", "unbounded"},
			absent:    []string{"off scale"},
			otherBars: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svg, err := CeilingsSVG(tc.class)
			if err != nil {
				t.Fatal(err)
			}
			info, err := reportcheck.CheckSVG(svg)
			if err != nil {
				t.Fatal(err)
			}
			if info.Kind != ChartCeilings || info.XLabel != labelPool || len(info.YLabels) != 1 || !strings.Contains(info.Title, tc.class.Name) {
				t.Errorf("chart info %+v", info)
			}
			texts := drawnTexts(t, svg)
			for _, want := range tc.texts {
				if !texts[want] {
					t.Errorf("%q is not drawn; texts: %v", want, keys(texts))
				}
			}
			for _, no := range tc.absent {
				if containsText(texts, no) {
					t.Errorf("%q is drawn", no)
				}
			}
			// One bar in the binding colour plus its legend swatch.
			if n := bytes.Count(svg, []byte(fillBinding)); n != 2 {
				t.Errorf("%d shapes in the binding colour, want the bar and the legend swatch", n)
			}
			if tc.otherBars > 0 {
				if n := bytes.Count(svg, []byte(fillOther)); n != tc.otherBars+1 {
					t.Errorf("%d shapes in the other colour, want %d bars and the swatch", n, tc.otherBars)
				}
			}
		})
	}
	if _, err := CeilingsSVG(plan.ClassPlan{Name: "empty"}); !errors.Is(err, ErrNoData) {
		t.Errorf("a class without ceilings: %v", err)
	}
}

func TestCeilingsSVGEscapesNames(t *testing.T) {
	c := plan.ClassPlan{Name: `x<script>"&`, Pool: 3, BindingConstraint: "rpm", Ceilings: []plan.Ceiling{{Constraint: "rpm", MaxPool: ptr(3)}}}
	svg, err := CeilingsSVG(c)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(svg, []byte("<script")) {
		t.Fatal("the class name reached the SVG unescaped")
	}
	info, err := reportcheck.CheckSVG(svg)
	if err != nil || !strings.Contains(info.Title, `x<script>"&`) {
		t.Fatalf("title %q, %v", info.Title, err)
	}
}

func TestThroughputSVG(t *testing.T) {
	r := syntheticResult()
	svg, err := ThroughputSVG(r)
	if err != nil {
		t.Fatal(err)
	}
	info, err := reportcheck.CheckSVG(svg)
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != ChartThroughput || strings.Join(info.YLabels, "|") != labelResponses+"|"+labelOutputTPS {
		t.Errorf("chart info %+v", info)
	}
	texts := drawnTexts(t, svg)
	for _, want := range []string{"knee 24", "collapse 48", "goodput", "throughput", "output TPS", "1", "24", "48"} {
		if !texts[want] {
			t.Errorf("%q is not drawn", want)
		}
	}

	noKnee := r
	noKnee.Knee, noKnee.Collapse = nil, nil
	noKnee.Steps = append([]measure.Step(nil), r.Steps...)
	noKnee.Steps[2].GoodputRPS = math.NaN()
	svg, err = ThroughputSVG(noKnee)
	if err != nil {
		t.Fatal(err)
	}
	if texts := drawnTexts(t, svg); containsText(texts, "knee") || containsText(texts, "collapse") {
		t.Error("a ramp without a knee shows one")
	}
	if bytes.Contains(svg, []byte("NaN")) || bytes.Contains(svg, []byte("Inf")) {
		t.Error("a NaN reached the SVG")
	}
	if _, err := ThroughputSVG(measure.Result{}); !errors.Is(err, ErrNoData) {
		t.Errorf("no steps: %v", err)
	}
}

func TestLatencySVG(t *testing.T) {
	r := syntheticResult()
	tests := []struct {
		name       string
		e2e, ttft  float64
		want, none []string
	}{
		{"both SLOs", 10000, 1000, []string{"E2E SLO 10,000 ms", "TTFT SLO 1,000 ms", "knee 24"}, nil},
		{"E2E only", 20000, 0, []string{"E2E SLO 20,000 ms"}, []string{"TTFT SLO"}},
		{"none", 0, math.Inf(1), []string{"TTFT p95", "E2E p95"}, []string{"SLO"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svg, err := LatencySVG(r, tc.e2e, tc.ttft)
			if err != nil {
				t.Fatal(err)
			}
			info, err := reportcheck.CheckSVG(svg)
			if err != nil {
				t.Fatal(err)
			}
			if info.Kind != ChartLatency || strings.Join(info.YLabels, "|") != labelTTFT+"|"+labelE2E {
				t.Errorf("chart info %+v", info)
			}
			texts := drawnTexts(t, svg)
			for _, want := range tc.want {
				if !texts[want] {
					t.Errorf("%q is not drawn", want)
				}
			}
			for _, no := range tc.none {
				if containsText(texts, no) {
					t.Errorf("%q is drawn", no)
				}
			}
		})
	}
	failed := measure.Result{Steps: []measure.Step{{Concurrency: 1, Requests: 40, Errors: 40}}}
	if _, err := LatencySVG(failed, 1000, 0); !errors.Is(err, ErrNoData) {
		t.Errorf("no successful step: %v", err)
	}
}

// TestChartsAreDeterministic renders every chart twice: same input, same bytes.
func TestChartsAreDeterministic(t *testing.T) {
	_, p := examplePlan(t, "three-classes")
	r := syntheticResult()
	render := map[string]func() ([]byte, error){
		"ceilings":   func() ([]byte, error) { return CeilingsSVG(p.Classes[2]) },
		"throughput": func() ([]byte, error) { return ThroughputSVG(r) },
		"latency":    func() ([]byte, error) { return LatencySVG(r, 10000, 1000) },
	}
	for name, fn := range render {
		a, err := fn()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := fn()
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two renderings differ", name)
		}
		if !bytes.HasPrefix(a, []byte("<svg ")) || bytes.Contains(a, []byte("<?xml")) {
			t.Errorf("%s: not a bare <svg> element: %.60s", name, a)
		}
	}
}

// TestChartsConcurrently renders charts from several goroutines at once, as
// an HTTP server does; run with -race it checks the shared font state.
func TestChartsConcurrently(t *testing.T) {
	r := syntheticResult()
	want, err := LatencySVG(r, 10000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			got, err := LatencySVG(r, 10000, 1000)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("a concurrent rendering differs (%v)", err)
			}
		})
	}
	wg.Wait()
}

// drawnTexts returns the content of every <text> element of an SVG.
func drawnTexts(t *testing.T, svg []byte) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	rest := string(svg)
	for {
		i := strings.Index(rest, "<text ")
		if i < 0 {
			return out
		}
		rest = rest[i:]
		open := strings.IndexByte(rest, '>')
		end := strings.Index(rest, "</text>")
		if open < 0 || end < open {
			t.Fatal("malformed <text> element")
		}
		out[htmlUnescape(rest[open+1:end])] = true
		rest = rest[end:]
	}
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&amp;", "&").Replace(s)
}

func containsText(texts map[string]bool, part string) bool {
	for k := range texts {
		if strings.Contains(k, part) {
			return true
		}
	}
	return false
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
