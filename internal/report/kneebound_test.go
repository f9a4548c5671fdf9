package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
)

// lowerBoundResult is a ladder 1, 2, 4 whose every step passed, growing
// almost linearly: its knee is ≥ 4, and its USL fit peaks far beyond 4.
func lowerBoundResult() measure.Result {
	var ss []measure.Step
	for _, r := range []struct{ c, x float64 }{{1, 3.70}, {2, 7.38}, {4, 14.70}} {
		ss = append(ss, measure.Step{Concurrency: int(r.c), Requests: 40, OK: 40, Answers: 40, GoodputRPS: r.x, ThroughputRPS: r.x,
			TTFTP50Ms: 200, TTFTP95Ms: 201, TPOTP50Ms: 10, TPOTP95Ms: 10, E2EP50Ms: 270, E2EP95Ms: 271})
	}
	return analysis.Analyze(ss, analysis.Options{DeadlineMs: 12000})
}

// TestRecordCardLowerBoundKnee: the card of a probe whose knee is a lower
// bound says knee ≥ 4 in its JSON and its Markdown, never that goodput
// peaked there, and shows the USL peak beyond the measured range with
// that caveat.
func TestRecordCardLowerBoundKnee(t *testing.T) {
	res := lowerBoundResult()
	if res.USL == nil || res.USL.Peak == nil || !res.USL.PeakBeyondRange {
		t.Fatalf("the fixture's USL fit %+v: want a peak beyond the measured range", res.USL)
	}
	card := NewRecordCard(CardInput{Probe: ProbeData{Result: res, Endpoint: "http://e/v1", Model: "m", DeadlineMs: 12000}})
	b, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["knee"] != 4.0 || doc["knee_lower_bound"] != true || doc["usl_peak_beyond_range"] != true || doc["measured_up_to"] != 4.0 {
		t.Errorf("card JSON %s: want knee 4 as a lower bound and the USL peak beyond the range", b)
	}
	var md bytes.Buffer
	if err := WriteRecordCardMarkdown(&md, card); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Knee | ≥ 4 in flight (a lower bound: no step failed the knee rule; probe to higher concurrency to find it) |",
		"in flight, beyond the measured range (up to 4 in flight): the fit's extrapolation, not a peak the probe saw |",
		"The probe never reached the knee (knee ≥ 4): goodput still grew at its last step, 4 in flight",
		"If the 429s come at or below the knee (≥ 4 in flight)",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the card lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "past the knee") || strings.Contains(md.String(), "goodput peaks around") {
		t.Errorf("the card says goodput peaked at a knee the probe never reached:\n%s", md.String())
	}

	// A measured knee keeps its words.
	measured := NewRecordCard(CardInput{Probe: ProbeData{Result: syntheticResult()}})
	if measured.KneeLowerBound || measured.USLPeakBeyondRange {
		t.Errorf("a measured knee: lower bound %v, USL peak beyond its range %v", measured.KneeLowerBound, measured.USLPeakBeyondRange)
	}
}

// TestAnalysisTableLowerBoundKnee: the verdict lines under the step table
// say knee ≥ 4 and put the caveat beside a USL peak beyond the ramp.
func TestAnalysisTableLowerBoundKnee(t *testing.T) {
	var b strings.Builder
	if err := WriteAnalysis(&b, lowerBoundResult(), nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"knee: ≥ 4 (a lower bound", "(beyond the measured range, up to 4 in flight: an extrapolation, not a peak)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteAnalysis(&b, syntheticResult(), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "knee: 24 ") || strings.Contains(b.String(), "beyond the measured range") {
		t.Errorf("a measured knee and a peak in range:\n%s", b.String())
	}
	if l := stepLabel(lowerBoundResult().Steps[2], lowerBoundResult()); l != "4 (knee ≥, a lower bound)" {
		t.Errorf("the report's step label %q", l)
	}
	svg, err := ThroughputSVG(lowerBoundResult())
	if err != nil || !strings.Contains(string(svg), "knee ≥ 4") {
		t.Errorf("the throughput chart lacks knee ≥ 4: %v", err)
	}
	facts := strings.Join(describeProbe(ProbeData{Result: lowerBoundResult()}), " ")
	if !strings.Contains(facts, "Knee: ≥ 4 requests in flight, a lower bound") || !strings.Contains(facts, "beyond the measured range (up to 4 in flight)") {
		t.Errorf("the report's probe facts: %s", facts)
	}
}
