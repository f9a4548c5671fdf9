package importer

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
)

// maxConcurrency bounds the concurrency an import accepts, so that a corrupt
// number cannot overflow the step table.
const maxConcurrency = 10_000_000

// MaxRows bounds the request rows of one import, over all its files: each
// row is held as a record of about 250 bytes while the steps are
// summarised, so a file of many short rows (a workshop CSV row is 20
// bytes) would otherwise take memory out of proportion to its size.
const MaxRows = 1_000_000

// maxRows is MaxRows, lowered by tests.
var maxRows = MaxRows

// errTooManyRows names the cap that a file's rows go beyond.
func errTooManyRows() error {
	return fmt.Errorf("holds more than %d request rows, the most one import reads: split the run into several imports, or sample its rows", maxRows)
}

// run is one step of a ramp as a parser read it: how the load was driven,
// the tool's summary figures, and the per-request rows when the file has
// them. finish turns it into an measure.Step.
type run struct {
	label string // names the run in notes when an import holds several

	// Load. A closed-loop run has a concurrency; an open-loop run has a rate
	// and its concurrency is estimated.
	concurrency  int     // configured in-flight cap of a closed loop; 0 when not known
	rateRPS      float64 // offered rate of an open loop; 0 when closed or not known
	inFlightCap  int     // an open loop's cap on requests in flight (vLLM's --max-concurrency); 0 when none
	meanInFlight float64 // average in-flight requests as the tool measured it; 0 when not given

	// Summary figures, when the file has them. tpotDerived and e2eDerived
	// mark a metric composed from the others (TPOT from E2E and TTFT, E2E
	// from TTFT and TPOT) rather than read.
	hasSummary                      bool
	tpotDerived, e2eDerived         bool
	countsKnown                     bool
	requests, ok, rateLimited, errs int
	wallS                           float64
	throughputRPS, outputTPS        float64
	ttft, tpot, e2e                 summary // milliseconds, over successful requests
	// e2eSamples are the successful requests' E2E in milliseconds, when
	// the file keeps them without the rest of each request's row (vLLM's
	// default save): E2E and goodput are then exact.
	e2eSamples []float64
	// pooledRuns counts the repeats pooled into this run (0 or 1 for
	// one run): a percentile from their summaries is an upper bound.
	pooledRuns int

	// Per-request rows, when the file has them.
	records         []measure.Record
	recordsComplete bool // every request of the run, not a sample
	recordsTimed    bool // records carry start times
	// probeLoop marks the rows of planner probe's requests.csv: a closed
	// loop ("closed", measured in its steady state) or an open loop
	// ("open"), summarised as the probe summarises them.
	probeLoop string
}

// load names the load a run was driven at, as configured: the closed
// loop's concurrency or the open loop's rate (0 when the file does not
// say). Two runs at the same load measure the same step.
func (r *run) load() string {
	switch {
	case r.concurrency > 0 && r.rateRPS > 0:
		return fmt.Sprintf("a request rate of %g req/s with %d in flight at most", r.rateRPS, r.concurrency)
	case r.inFlightCap > 0 && r.rateRPS > 0:
		return fmt.Sprintf("a request rate of %g req/s with %d in flight at most", r.rateRPS, r.inFlightCap)
	case r.concurrency > 0:
		return fmt.Sprintf("concurrency %d", r.concurrency)
	case r.rateRPS > 0:
		return fmt.Sprintf("a request rate of %g req/s", r.rateRPS)
	}
	return "an unknown load (the files give no concurrency and no rate)"
}

// finish resolves the run's concurrency and produces its step and records
// (with Step set) plus notes on every estimate made.
func (r *run) finish(opts analysis.Options) (measure.Step, []measure.Record, []string, error) {
	var notes []string
	c, estimated, cNotes, err := r.resolveConcurrency()
	if err != nil {
		return measure.Step{}, nil, nil, err
	}
	notes = append(notes, cNotes...)
	for i := range r.records {
		r.records[i].Step = c
	}
	var st measure.Step
	switch {
	case len(r.records) > 0 && (r.recordsComplete || !r.hasSummary):
		st, err = r.stepFromRecords(c, opts)
		if err != nil {
			return measure.Step{}, nil, nil, err
		}
		if !r.recordsTimed && r.wallS <= 0 {
			notes = append(notes, "the rows carry no start times and the file no wall time: throughput, goodput and output TPS are unknown (0)")
		}
	case r.hasSummary:
		var sNotes []string
		if st, sNotes, err = r.stepFromSummary(opts); err != nil {
			return measure.Step{}, nil, nil, err
		}
		notes = append(notes, sNotes...)
		if len(r.records) > 0 {
			notes = append(notes, fmt.Sprintf("the file keeps a sample of %s: the step comes from the tool's summary, the rows are kept as they are", plural(len(r.records), "request")))
		}
	default:
		return measure.Step{}, nil, nil, errors.New("holds neither summary figures nor per-request rows")
	}
	st.Concurrency = c
	st.ConcurrencyEstimated = estimated
	if st.RateRPS == 0 {
		st.RateRPS = r.rateRPS
	}
	if err := checkStep(st); err != nil {
		return measure.Step{}, nil, nil, err
	}
	return st, r.records, notes, nil
}

// judgesSLO refuses a TTFT or TPOT target of slo that a run summarised
// from its rows cannot judge, since none of its successful rows has the
// figure (the workshop layout has neither a TTFT nor token counts, a run
// without streaming no TTFT): every request would count as meeting it.
// A row of one output token has no TPOT and meets a TPOT target, as vLLM
// counts it (measure.Targets); a run with no successful row met none. A summary's targets
// without a distribution are left out with a note instead (sloGoodput).
func (r *run) judgesSLO(slo measure.Targets) error {
	if !(len(r.records) > 0 && (r.recordsComplete || !r.hasSummary)) {
		return nil
	}
	ok, ttft, tokens := false, false, false
	for _, rec := range r.records {
		if rec.OK {
			ok = true
			ttft = ttft || rec.TTFTMs > 0
			tokens = tokens || (rec.TTFTMs > 0 && rec.OutputTokens > 0)
		}
	}
	switch {
	case !ok:
		return nil // no request succeeded: none met any target, and the attainment says so
	case slo.TTFTMs > 0 && !ttft:
		return fmt.Errorf("the SLO's TTFT target (%g ms) cannot be judged: no successful row has a TTFT, so every request would count as meeting it; leave the target out", slo.TTFTMs)
	case slo.TPOTMs > 0 && !tokens:
		return fmt.Errorf("the SLO's TPOT target (%g ms) cannot be judged: no successful row has a TTFT and output tokens, so every request would count as meeting it; leave the target out", slo.TPOTMs)
	}
	return nil
}

// resolveConcurrency returns the configured concurrency, or an estimate of
// the average number of requests in flight: measured by the tool, or by
// Little's Law (L = λW) from the rows or from throughput × mean E2E.
func (r *run) resolveConcurrency() (int, bool, []string, error) {
	if r.concurrency > 0 {
		if r.concurrency > maxConcurrency {
			return 0, false, nil, fmt.Errorf("concurrency %d is beyond %d", r.concurrency, maxConcurrency)
		}
		return r.concurrency, false, nil, nil
	}
	var l float64
	var how string
	switch {
	case r.meanInFlight > 0:
		l, how = r.meanInFlight, "the tool's measured mean of requests in flight"
	case len(r.records) > 0 && (r.recordsComplete || !r.hasSummary) && r.recordsWall() > 0:
		var busy float64
		for _, rec := range r.records {
			if !rec.Warmup {
				busy += rec.E2EMs / 1000
			}
		}
		l, how = busy/r.recordsWall(), "Little's Law from the rows: the sum of request times over the wall time"
	case r.throughputRPS > 0 && r.e2e.mean > 0:
		l, how = r.throughputRPS*r.e2e.mean/1000, fmt.Sprintf("Little's Law: throughput %.4g req/s × mean E2E %.4g ms", r.throughputRPS, r.e2e.mean)
	}
	if !(l > 0) {
		return 0, false, []string{"concurrency unknown: the file gives no concurrency and no way to estimate it"}, nil
	}
	if l > maxConcurrency {
		return 0, false, nil, fmt.Errorf("estimated concurrency %g is not plausible", l)
	}
	c := int(math.Round(l))
	note := fmt.Sprintf("concurrency %d estimated (%.3g) by %s", max(c, 1), l, how)
	switch {
	case c < 1:
		c = 1
		note += "; below 1, so recorded as 1"
	case r.inFlightCap > 0 && c > r.inFlightCap:
		c = r.inFlightCap
		note += fmt.Sprintf("; above the run's cap of %d in flight, so recorded at the cap", r.inFlightCap)
	}
	return c, true, []string{note}, nil
}

// recordsWall is the run's wall time: as the file gives it, or from the
// first send to the last completion of timed rows.
func (r *run) recordsWall() float64 {
	if r.wallS > 0 {
		return r.wallS
	}
	if !r.recordsTimed {
		return 0
	}
	first, last := math.Inf(1), math.Inf(-1)
	for _, rec := range r.records {
		if rec.Warmup {
			continue
		}
		first = math.Min(first, rec.StartS)
		last = math.Max(last, rec.StartS+rec.E2EMs/1000)
	}
	if last > first {
		return last - first
	}
	return 0
}

func (r *run) stepFromRecords(c int, opts analysis.Options) (measure.Step, error) {
	var steps []measure.Step
	switch r.probeLoop {
	case "closed":
		steps = analysis.Summarize(r.records, opts)
	case "open":
		steps = analysis.SummarizeOpen(r.records, opts)
	default:
		var wall map[int]float64
		if r.wallS > 0 {
			wall = map[int]float64{c: r.wallS}
		}
		steps = analysis.SummarizeOver(r.records, opts, wall)
	}
	if len(steps) != 1 {
		return measure.Step{}, errors.New("has no measured requests (only warm-up rows)")
	}
	st := steps[0]
	if r.probeLoop != "" {
		st.Connections = measure.SummarizeConns(r.records) // the probe's own rows say how each request got its connection
	}
	if !r.recordsTimed && r.wallS <= 0 {
		st.WallS, st.ThroughputRPS, st.GoodputRPS, st.OutputTPS = 0, 0, 0, 0
	}
	return st, nil
}

func (r *run) stepFromSummary(opts analysis.Options) (measure.Step, []string, error) {
	st := measure.Step{
		Requests:          r.requests,
		OK:                r.ok,
		RateLimited:       r.rateLimited,
		RateLimitedFailed: r.rateLimited,
		Errors:            r.errs,
		Answers:           r.requests,
		WallS:             r.wallS,
		ThroughputRPS:     r.throughputRPS,
		OutputTPS:         r.outputTPS,
		CountsUnknown:     !r.countsKnown,
	}
	var notes []string
	for _, m := range []struct {
		name               string
		s                  summary
		p50, p90, p95, p99 *float64
		estimated          *bool
		derived            bool
	}{
		{"TTFT", r.ttft, &st.TTFTP50Ms, &st.TTFTP90Ms, &st.TTFTP95Ms, &st.TTFTP99Ms, &st.TTFTEstimated, false},
		{"TPOT", r.tpot, &st.TPOTP50Ms, &st.TPOTP90Ms, &st.TPOTP95Ms, &st.TPOTP99Ms, &st.TPOTEstimated, r.tpotDerived},
		{"E2E", r.e2e, &st.E2EP50Ms, &st.E2EP90Ms, &st.E2EP95Ms, &st.E2EP99Ms, &st.E2EEstimated, r.e2eDerived},
	} {
		p50, p95, est, n, err := m.s.p50p95(m.name)
		if err != nil {
			return st, nil, err
		}
		exact := m.name == "E2E" && len(r.e2eSamples) > 0
		pooled := r.pooledRuns > 1 && !exact && p50 > 0
		*m.p50, *m.p95, *m.estimated = p50, p95, est || (m.derived && p50 > 0) || pooled
		// p90 and p99 only as reported: 0 (not given) otherwise.
		*m.p90, *m.p99 = m.s.q[0.9], m.s.q[0.99]
		notes = append(notes, n...)
	}
	if !r.countsKnown {
		notes = append(notes, "the file gives no request counts: requests, ok and errors are unknown (0)")
	}
	st.GoodputRPS = st.ThroughputRPS
	if !opts.SLO.IsZero() && st.ThroughputRPS > 0 {
		return st, append(notes, r.sloGoodput(&st, opts)...), nil
	}
	if opts.DeadlineMs <= 0 || st.ThroughputRPS == 0 {
		return st, notes, nil
	}
	frac, exact, ok := r.e2e.fractionWithin(opts.DeadlineMs)
	if len(r.e2eSamples) > 0 {
		within := 0
		for _, x := range r.e2eSamples {
			if x <= opts.DeadlineMs {
				within++
			}
		}
		frac, exact, ok = float64(within)/float64(len(r.e2eSamples)), true, true
	}
	switch {
	case !ok:
		st.GoodputEstimated = true
		notes = append(notes, "goodput is the throughput (marked estimated): the file gives no E2E distribution to judge the deadline by")
	case exact:
		st.GoodputRPS = st.ThroughputRPS * frac
	default:
		st.GoodputRPS = st.ThroughputRPS * frac
		st.GoodputEstimated = true
		notes = append(notes, fmt.Sprintf("goodput estimated as throughput × %.1f%%, the share of requests within the %.0f ms deadline read off the E2E percentiles", 100*frac, opts.DeadlineMs))
	}
	if r.e2eDerived {
		st.GoodputEstimated = true
	}
	return st, notes, nil
}

// sloGoodput sets the goodput and the SLO attainment of a step read from a
// summary, under an SLO: without per-request rows the requests that met
// every target at once cannot be counted, so the share is the smallest
// of the shares within each bound (the deadline and each target, each
// read off its metric's distribution as the deadline's is): an upper
// bound, exact only when the rows of E2E alone judge every bound, or
// when a share is exactly 0. The goodput and the attainment are marked
// estimated otherwise, and a note says how they were read.
func (r *run) sloGoodput(st *measure.Step, opts analysis.Options) []string {
	type bound struct {
		name    string
		s       summary
		samples []float64
		limit   float64
	}
	var bounds []bound
	if opts.DeadlineMs > 0 {
		bounds = append(bounds, bound{"the deadline", r.e2e, r.e2eSamples, opts.DeadlineMs})
	}
	for _, b := range []bound{{"the TTFT target", r.ttft, nil, opts.SLO.TTFTMs}, {"the TPOT target", r.tpot, nil, opts.SLO.TPOTMs}, {"the E2E target", r.e2e, r.e2eSamples, opts.SLO.E2EMs}} {
		if b.limit > 0 {
			bounds = append(bounds, b)
		}
	}
	var notes, read []string
	share, exact, judged := 1.0, true, 0
	for _, b := range bounds {
		frac, ex, ok := b.s.fractionWithin(b.limit)
		if len(b.samples) > 0 {
			within := 0
			for _, x := range b.samples {
				if x <= b.limit {
					within++
				}
			}
			frac, ex, ok = float64(within)/float64(len(b.samples)), true, true
		}
		if !ok {
			exact = false
			notes = append(notes, fmt.Sprintf("the file gives no distribution to judge %s (%.0f ms) by: goodput ignores it", b.name, b.limit))
			continue
		}
		judged++
		exact = exact && ex
		share = math.Min(share, frac)
		read = append(read, fmt.Sprintf("%.1f %% within %s", 100*frac, b.name))
	}
	// Bounds judged on one metric's exact rows together are exact; the
	// metrics' joint distribution is unknown otherwise.
	sameRows := judged <= 1 || (opts.SLO.TTFTMs == 0 && opts.SLO.TPOTMs == 0 && len(r.e2eSamples) > 0)
	exact = share == 0 || (exact && sameRows)
	st.GoodputRPS = st.ThroughputRPS * share
	attainment := share
	if st.Requests > 0 {
		attainment = share * float64(st.OK) / float64(st.Requests)
	}
	st.SLO = &measure.SLOStats{Met: int(math.Round(share * float64(st.OK))), Attainment: math.Round(attainment*1e4) / 1e4, Estimated: !exact}
	if r.e2eDerived {
		st.GoodputEstimated = true
	}
	if !exact {
		st.GoodputEstimated = true
		notes = append(notes, fmt.Sprintf("goodput estimated as throughput × %.1f %%, the smallest of the shares read off the file's percentiles (%s): an upper bound, since the file has no per-request rows to count the requests that met every target at once",
			100*share, strings.Join(read, ", ")))
	}
	return notes
}

// maxRateRPS and maxOutputTPS are the largest rates a step may have, as
// a scenario's curve point allows them (throughput_rps, goodput_rps and
// output_tps): beyond them the curve that the step gives is refused.
const (
	maxRateRPS   = 1e9
	maxOutputTPS = 1e12
)

// maxStartS is the latest a request may start, in seconds from the start
// of its run, and the longest a step may last, as the API's rows and
// steps (AnalysisRow.start_s, AnalysisStep.wall_s) allow.
const maxStartS = 1e9

// checkStep rejects figures that are negative, not finite or beyond what
// a step may have, which only a corrupt file produces and which no output
// may carry.
func checkStep(s measure.Step) error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"rate", s.RateRPS}, {"wall time", s.WallS}, {"goodput", s.GoodputRPS},
		{"throughput", s.ThroughputRPS}, {"output TPS", s.OutputTPS},
		{"TTFT p50", s.TTFTP50Ms}, {"TTFT p95", s.TTFTP95Ms},
		{"E2E p50", s.E2EP50Ms}, {"E2E p95", s.E2EP95Ms},
		{"TPOT p50", s.TPOTP50Ms}, {"TPOT p95", s.TPOTP95Ms},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("%s is %g: not a finite non-negative number", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name, unit string
		v, max     float64
	}{
		{"rate", "req/s", s.RateRPS, maxRateRPS}, {"throughput", "req/s", s.ThroughputRPS, maxRateRPS},
		{"goodput", "req/s", s.GoodputRPS, maxRateRPS}, {"output TPS", "tokens/s", s.OutputTPS, maxOutputTPS},
	} {
		if f.v > f.max {
			return fmt.Errorf("%s is %.4g %s, beyond the %.0g %s a measured step may have: the file's figures are not plausible", f.name, f.v, f.unit, f.max, f.unit)
		}
	}
	if s.WallS > maxStartS {
		return fmt.Errorf("wall time is %.4g s, beyond the %.0g s a measured step may last: the file's figures are not plausible", s.WallS, float64(maxStartS))
	}
	if s.Requests < 0 || s.OK < 0 || s.RateLimited < 0 || s.Errors < 0 {
		return errors.New("has a negative request count")
	}
	// No request ends before its first token, so no percentile of E2E is
	// below the same percentile of TTFT: a file that says so is corrupt
	// (POST /v1/analyses refuses such a step). A stand-in percentile (a
	// p99 for a missing p95, the mean for a missing median) is not the
	// same percentile and is not compared.
	if !s.TTFTEstimated && !s.E2EEstimated {
		for _, p := range []struct {
			name      string
			ttft, e2e float64
		}{{"p50", s.TTFTP50Ms, s.E2EP50Ms}, {"p95", s.TTFTP95Ms, s.E2EP95Ms}} {
			if p.ttft > 0 && p.e2e > 0 && p.e2e < p.ttft {
				return fmt.Errorf("E2E %s (%.4g ms) is below TTFT %s (%.4g ms): a request ends after its first token, so the file's figures are inconsistent", p.name, p.e2e, p.name, p.ttft)
			}
		}
	}
	return nil
}

// checkRecord rejects a row whose times are negative or not finite, a
// latency beyond the 10⁹ ms a summary's may be, a start beyond the 10⁹ s
// a row given to POST /v1/analyses may have (which would stretch its
// step's window, and sink its rates, by as much), and a request that ended
// before its first token (as POST /v1/analyses refuses such a row). Each
// time is named as requests.csv names it.
//
// Every parser checks its rows as it reads them, through checkRow, so
// that a refusal says where the row is in the file.
func checkRecord(r *measure.Record) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"start_s", r.StartS}, {"ack_ms", r.AckMs}, {"ttft_ms", r.TTFTMs}, {"e2e_ms", r.E2EMs}, {"retry_after_ms", r.RetryAfterMs}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("%s %g is not a finite non-negative number", f.name, f.v)
		}
		if f.name == "start_s" && f.v > maxStartS {
			return fmt.Errorf("%s %.4g is beyond the %.0g s a request may start at, from the start of its run", f.name, f.v, float64(maxStartS))
		}
		if f.name != "start_s" && f.v > maxQuantileMs {
			return fmt.Errorf("%s %.4g is beyond the %.0g ms a latency may be", f.name, f.v, float64(maxQuantileMs))
		}
	}
	if r.TTFTMs > 0 && r.E2EMs > 0 && r.E2EMs < r.TTFTMs {
		return fmt.Errorf("e2e_ms %.6g is below its ttft_ms %.6g: a request ends after its first token", r.E2EMs, r.TTFTMs)
	}
	if r.OutputTokens < 0 || r.InputTokens < 0 {
		return errors.New("negative token count")
	}
	if !httpStatus(r.Status) {
		return fmt.Errorf("status %d is not an HTTP status: one is 100 to 599, with 0 when no answer arrived", r.Status)
	}
	return nil
}

// httpStatus reports whether a row's status is one an answer can have,
// 100 to 599, or 0, the status of a request that got no answer.
func httpStatus(code int) bool { return code == 0 || (code >= 100 && code <= 599) }

// checkRow is checkRecord for the row at where, which names the row as
// the user finds it in the file: its line in a line-based file (a CSV,
// JSON Lines), else its own id, or its place in the file's list.
func checkRow(r *measure.Record, where string) error {
	if err := checkRecord(r); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// plural writes "1 request" or "3 requests".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
