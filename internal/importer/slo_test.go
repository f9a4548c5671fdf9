package importer

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
)

// TestSLOGoodputOfASummary: vLLM's summary gives TTFT p50 248.47 and p95
// 261.14 ms, TPOT p50 17.30 and p95 28.50 ms, and no per-request rows.
// Under ttft:255ms,tpot:20ms, 73.2 % lie within the TTFT target and
// 60.9 % within the TPOT one (interpolated between p50 and p95); the
// requests that met both are at most the smaller share, so the goodput is
// estimated, as an upper bound, at 60.9 % of the throughput, and the note
// says so.
func TestSLOGoodputOfASummary(t *testing.T) {
	data, err := os.ReadFile("testdata/vllm/benchmark_2025-05-13_04-37-51.json")
	if err != nil {
		t.Fatal(err)
	}
	slo := measure.Targets{TTFTMs: 255, TPOTMs: 20}
	imp, err := Import("benchmark.json", data, Options{Options: analysis.Options{SLO: slo}})
	if err != nil {
		t.Fatal(err)
	}
	s := oneStep(t, imp)
	share := 0.5 + 0.45*(20-17.295888123007717)/(28.49777645053255-17.295888123007717)
	near(t, "goodput", s.GoodputRPS, s.ThroughputRPS*share)
	if !s.GoodputEstimated || s.SLO == nil || !s.SLO.Estimated || math.Abs(s.SLO.Attainment-share) > 1e-4 || s.SLO.Met != int(math.Round(200*share)) {
		t.Errorf("step %+v, SLO %+v: want an estimated attainment of %.4f", s, s.SLO, share)
	}
	notes := strings.Join(append(imp.Notes, imp.Analysis.Notes...), "\n")
	for _, want := range []string{"73.2 % within the TTFT target", "60.9 % within the TPOT target", "an upper bound"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes lack %q:\n%s", want, notes)
		}
	}
	if imp.Analysis.SLO == nil || *imp.Analysis.SLO != slo {
		t.Errorf("the analysis carries the SLO %+v", imp.Analysis.SLO)
	}
}

// TestSLOGoodputOfRows: a probe's requests.csv is judged row by row: the
// attainment counts the rows that met every target, exactly.
func TestSLOGoodputOfRows(t *testing.T) {
	var recs []measure.Record
	for i := range 60 {
		ttft := 100.0 + float64(i%10)*20 // 100 to 280 ms
		recs = append(recs, measure.Record{Step: 1, Index: i, StartS: float64(i), TTFTMs: ttft, E2EMs: ttft + 500, OutputTokens: 11,
			Status: 200, OK: true, Attempts: 1, Warmup: i < 2})
	}
	var csv bytes.Buffer
	if err := measure.WriteCSV(&csv, recs); err != nil {
		t.Fatal(err)
	}
	imp, err := Import("requests.csv", csv.Bytes(), Options{Options: analysis.Options{SLO: measure.Targets{TTFTMs: 200, TPOTMs: 60}}})
	if err != nil {
		t.Fatal(err)
	}
	s := oneStep(t, imp)
	// TTFT ≤ 200 ms for i%10 ≤ 5: 6 of every 10; rows 0 and 1 are warm-up.
	met := 0
	for _, r := range recs[2:] {
		if r.TTFTMs <= 200 {
			met++
		}
	}
	if s.SLO == nil || s.SLO.Estimated || s.SLO.Met != met || s.Requests != 58 || s.GoodputEstimated {
		t.Errorf("step %+v, SLO %+v: want %d of 58 met, counted", s, s.SLO, met)
	}
}

// TestSLOTargetsRowsCannotJudgeAreRefused: the workshop layout's rows
// carry no TTFT and no token counts, so a TTFT or a TPOT target cannot be
// judged by them; they are refused, named, rather than counted as met by
// every request (ttft:500ms gave 100 % attainment to requests of about
// 1,000 ms each). An E2E target, which the ms column judges, still reads.
func TestSLOTargetsRowsCannotJudgeAreRefused(t *testing.T) {
	data, err := os.ReadFile("testdata/handmade/workshop_ramp.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		slo  measure.Targets
		want string
	}{
		{measure.Targets{TTFTMs: 500}, "ramp.csv: the SLO's TTFT target (500 ms) cannot be judged: no successful row has a TTFT"},
		{measure.Targets{TPOTMs: 50, E2EMs: 1500}, "ramp.csv: the SLO's TPOT target (50 ms) cannot be judged: no successful row has a TTFT and output tokens"},
	} {
		_, err := Import("ramp.csv", data, Options{Options: analysis.Options{SLO: tc.slo}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SLO %s: err = %v, want %q", tc.slo, err, tc.want)
		}
	}
	// A ramp none of whose requests succeeded met no target: it reads,
	// with an attainment of 0.
	failed := []byte("step,idx,ok,code,ms,wall_s\n1,0,0,500,10,1\n1,1,0,500,10,1\n")
	if imp, err := Import("ramp.csv", failed, Options{Options: analysis.Options{SLO: measure.Targets{TTFTMs: 500}}}); err != nil || imp.Steps[0].SLO == nil || imp.Steps[0].SLO.Attainment != 0 {
		t.Errorf("a ramp without a success under ttft:500ms: %v; want it read, none met", err)
	}
	imp, err := Import("ramp.csv", data, Options{Options: analysis.Options{SLO: measure.Targets{E2EMs: 1500}}})
	if err != nil || imp.Steps[len(imp.Steps)-1].SLO == nil || imp.Steps[len(imp.Steps)-1].SLO.Attainment != 0 {
		t.Fatalf("e2e:1500ms: %v, %+v; want the step at 16, of about 2,000 ms each, to meet none", err, imp.Steps)
	}
}
