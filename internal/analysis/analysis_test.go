package analysis

import (
	"bytes"
	"math"
	"testing"
)

// steps builds a ramp from (concurrency, goodput, e2e p95) triples.
func steps(rows ...[3]float64) []Step {
	out := make([]Step, len(rows))
	for i, r := range rows {
		out[i] = Step{Concurrency: int(r[0]), Requests: 40, OK: 40, GoodputRPS: r[1], ThroughputRPS: r[1], E2EP95Ms: r[2]}
	}
	return out
}

func TestKneeRule(t *testing.T) {
	opts := Options{DeadlineMs: 10000}
	tests := []struct {
		name     string
		steps    []Step
		knee     *int
		collapse *int
	}{
		{
			name:  "saturates at 8",
			steps: steps([3]float64{1, 0.8, 1200}, [3]float64{2, 1.6, 1210}, [3]float64{4, 3.2, 1230}, [3]float64{8, 6.3, 1260}, [3]float64{16, 6.4, 2500}, [3]float64{32, 6.4, 5000}),
			knee:  ptr(8),
		},
		{
			name: "noise after the knee does not move it",
			// 16 gains under 10 %, 32 gains again: the knee stays at 8.
			steps:    steps([3]float64{1, 1, 1000}, [3]float64{2, 2, 1000}, [3]float64{4, 4, 1000}, [3]float64{8, 7.5, 1100}, [3]float64{16, 7.9, 2000}, [3]float64{32, 9.5, 3000}),
			knee:     ptr(8),
			collapse: nil,
		},
		{
			name:  "p95 breaks the rule before goodput does",
			steps: steps([3]float64{1, 1, 2000}, [3]float64{2, 2, 4000}, [3]float64{4, 4, 6500}, [3]float64{8, 8, 9000}),
			knee:  ptr(2), // 6,500 ms is not under 0.6 × 10,000 ms
		},
		{
			name:  "first step fails: no knee",
			steps: steps([3]float64{1, 1, 7000}, [3]float64{2, 2, 7100}),
			knee:  nil,
		},
		{
			name:  "flat from the start: the knee is the first step",
			steps: steps([3]float64{1, 5, 1000}, [3]float64{2, 5.1, 1900}, [3]float64{4, 5.0, 3900}),
			// goodput fell from 5.1 to 5.0 at 4.
			knee:     ptr(1),
			collapse: ptr(4),
		},
		{
			name:     "collapse after the knee",
			steps:    steps([3]float64{4, 4, 1000}, [3]float64{8, 8, 1100}, [3]float64{16, 8.2, 2000}, [3]float64{32, 5, 4000}),
			knee:     ptr(8),
			collapse: ptr(32),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Analyze(tt.steps, opts)
			if !equalPtr(res.Knee, tt.knee) {
				t.Errorf("knee = %v, want %v", deref(res.Knee), deref(tt.knee))
			}
			if !equalPtr(res.Collapse, tt.collapse) {
				t.Errorf("collapse = %v, want %v", deref(res.Collapse), deref(tt.collapse))
			}
		})
	}
}

func TestKneeAtTheEndOfTheRampIsNoted(t *testing.T) {
	res := Analyze(steps([3]float64{1, 1, 100}, [3]float64{2, 2, 100}, [3]float64{4, 4, 100}), Options{DeadlineMs: 1000})
	if res.Knee == nil || *res.Knee != 4 || len(res.Notes) == 0 {
		t.Fatalf("knee %v notes %v: want knee 4 with a note to extend the ramp", deref(res.Knee), res.Notes)
	}
}

func TestQuotaLimited(t *testing.T) {
	ss := steps([3]float64{1, 1, 100}, [3]float64{2, 2, 100}, [3]float64{4, 2.1, 100})
	if Analyze(ss, Options{}).QuotaLimited {
		t.Fatal("no 429s, yet quota-limited")
	}
	ss[2].RateLimited = 10 // beyond the knee (2): the model saturated first
	if Analyze(ss, Options{}).QuotaLimited {
		t.Fatal("429s only beyond the knee count as quota-limited")
	}
	ss[1].RateLimited = 1
	if !Analyze(ss, Options{}).QuotaLimited {
		t.Fatal("429s at the knee should mark the ramp quota-limited")
	}
}

func TestAnalyzeFitsUSL(t *testing.T) {
	ss := steps([3]float64{1, 1, 100}, [3]float64{2, 1.9, 100}, [3]float64{4, 3.4, 100}, [3]float64{8, 5.2, 100}, [3]float64{16, 6.0, 100}, [3]float64{32, 5.1, 100})
	res := Analyze(ss, Options{})
	if res.USL == nil || res.USL.Peak == nil {
		t.Fatalf("no USL fit with a peak: %+v", res.USL)
	}
	if p := *res.USL.Peak; p < 10 || p > 30 {
		t.Errorf("peak N* = %g, want between 10 and 30 for a curve that tops out at 16", p)
	}
	if res.USL.R2 < 0.95 {
		t.Errorf("R² = %g", res.USL.R2)
	}
}

func TestSummarizeKnownNumbers(t *testing.T) {
	var recs []Record
	// Step 2: four requests over 2 s, one late, one 429.
	recs = append(recs,
		Record{Step: 2, Index: 0, StartS: 0, TTFTMs: 100, E2EMs: 1000, OutputTokens: 11, Status: 200, OK: true},
		Record{Step: 2, Index: 1, StartS: 0, TTFTMs: 200, E2EMs: 1000, OutputTokens: 11, Status: 200, OK: true},
		Record{Step: 2, Index: 2, StartS: 1, TTFTMs: 300, E2EMs: 1000, OutputTokens: 21, Status: 200, OK: true},
		Record{Step: 2, Index: 3, StartS: 1, E2EMs: 5, Status: 429, ErrorClass: ErrRateLimited},
		Record{Step: 2, Index: 4, StartS: 0, TTFTMs: 100, E2EMs: 100, OutputTokens: 3, Status: 200, OK: true, Warmup: true},
	)
	got := Summarize(recs, Options{DeadlineMs: 900}, nil)
	if len(got) != 1 {
		t.Fatalf("steps = %d, want 1", len(got))
	}
	s := got[0]
	if s.Requests != 4 || s.OK != 3 || s.RateLimited != 1 || s.Errors != 0 {
		t.Errorf("counts %+v", s)
	}
	if s.WallS != 2 {
		t.Errorf("wall = %g s, want 2", s.WallS)
	}
	if s.ThroughputRPS != 1.5 || s.GoodputRPS != 0 || s.OutputTPS != 21.5 {
		t.Errorf("throughput %g goodput %g output tps %g, want 1.5, 0 (all late), 21.5", s.ThroughputRPS, s.GoodputRPS, s.OutputTPS)
	}
	if s.TTFTP50Ms != 200 || math.Abs(s.TTFTP95Ms-290) > 1e-9 {
		t.Errorf("ttft p50 %g p95 %g, want 200 and 290", s.TTFTP50Ms, s.TTFTP95Ms)
	}
	// TPOT: 900/10 = 90, 800/10 = 80, 700/20 = 35.
	if s.TPOTP50Ms != 80 || math.Abs(s.TPOTP95Ms-89) > 1e-9 {
		t.Errorf("tpot p50 %g p95 %g, want 80 and 89", s.TPOTP50Ms, s.TPOTP95Ms)
	}
	withWall := Summarize(recs, Options{}, map[int]float64{2: 4})
	if withWall[0].WallS != 4 || withWall[0].GoodputRPS != 0.75 {
		t.Errorf("given wall: %+v", withWall[0])
	}
}

func TestLatencyBlock(t *testing.T) {
	ss := []Step{
		{Concurrency: 1, OK: 10, Requests: 10, TTFTP50Ms: 200, TTFTP95Ms: 210, TPOTP50Ms: 20, TPOTP95Ms: 21, ThroughputRPS: 1},
		{Concurrency: 2, OK: 0, Requests: 10, Errors: 10},
		{Concurrency: 4, OK: 9, Requests: 10, RateLimited: 1, TTFTP50Ms: 220, TTFTP95Ms: 260, TPOTP50Ms: 21, TPOTP95Ms: 23, ThroughputRPS: 3.5},
	}
	l, err := Result{Steps: ss, Knee: ptr(4)}.Latency()
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Curve) != 2 || l.Curve[1].Concurrency != 4 || l.Curve[1].RateLimitedRate != 0.1 || *l.Knee != 4 {
		t.Fatalf("latency block %+v", l)
	}
	if _, err := (Result{Steps: ss[1:2]}).Latency(); err == nil {
		t.Fatal("a ramp without successes gave a curve")
	}
}

func TestCSVRoundTrip(t *testing.T) {
	in := []Record{
		{Step: 4, Index: 7, StartS: 1.25, AckMs: 10, TTFTMs: 201.5, E2EMs: 1200.25, OutputTokens: 50, InputTokens: 512, Status: 200, Attempts: 1, OK: true},
		{Step: 8, Index: 0, StartS: 3, E2EMs: 12, Status: 429, ErrorClass: ErrRateLimited, Attempts: 2, RetryAfterMs: 1500, OutputEstimated: true, Warmup: true},
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadCSV(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("read %d records, want %d", len(out), len(in))
	}
	for i := range in {
		if in[i] != out[i] {
			t.Errorf("record %d: wrote %+v, read %+v", i, in[i], out[i])
		}
	}
	if _, err := ReadCSV(bytes.NewBufferString("a,b\n1,2\n")); err == nil {
		t.Error("a foreign CSV was read as a probe CSV")
	}
}

func equalPtr(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref(p *int) any {
	if p == nil {
		return "null"
	}
	return *p
}
