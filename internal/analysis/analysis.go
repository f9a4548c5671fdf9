// Package analysis holds the judgement of a measured ramp (its data model
// is package measure): it turns the requests of a concurrency ramp into
// per-step summaries measured in steady state with their confidence intervals,
// finds the knee and the collapse point with the noise in mind, judges
// whether the quota bound the ramp, fits the Universal Scalability Law to
// the throughput, and converts the result into the latency block of a
// scenario (docs/probe.md, "What the numbers mean", holds every rule).
// Probes, importers and the API all share it, so every source of
// measurements is judged the same way.
package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// Options are the judgement settings of a ramp.
type Options struct {
	DeadlineMs     float64 // a response is good only if it ends within this; 0 = no deadline
	MinGainPct     float64 // knee: goodput must grow at least this much per step (default 10)
	MaxP95Fraction float64 // knee: E2E p95 must stay under this fraction of the deadline (default 0.6)
	// CollapseTolerancePct is how far, in percent, goodput must fall below
	// the previous step's, beyond both steps' intervals, to count as a
	// fall (default 5).
	CollapseTolerancePct float64
	// SLO, when it gives targets, narrows goodput to the requests that
	// met every target at once, within the deadline (vLLM's and AIPerf's
	// --goodput); each step then reports its attainment (measure.SLOStats)
	// and the knee's gain rule judges that goodput.
	SLO measure.Targets
}

// Goal is what makes a request good under o: the deadline and the SLO.
func (o Options) Goal() measure.Goal { return measure.Goal{DeadlineMs: o.DeadlineMs, SLO: o.SLO} }

// Default judgement settings (docs/probe.md).
const (
	DefaultMinGainPct           = 10.0
	DefaultMaxP95Fraction       = 0.6
	DefaultCollapseTolerancePct = 5.0
)

// WithDefaults returns o with zero values replaced by the defaults.
func (o Options) WithDefaults() Options {
	if o.MinGainPct == 0 {
		o.MinGainPct = DefaultMinGainPct
	}
	if o.MaxP95Fraction == 0 {
		o.MaxP95Fraction = DefaultMaxP95Fraction
	}
	if o.CollapseTolerancePct == 0 {
		o.CollapseTolerancePct = DefaultCollapseTolerancePct
	}
	return o
}

// Summarize groups the records of a closed-loop ramp by step and
// summarises each in its steady state, in ascending order of concurrency;
// cancelled records are left out. It is how the probe, planner knee on a
// probe's requests.csv, the API's rows and the service measure a step.
func Summarize(records []measure.Record, opts Options) []measure.Step {
	return summarize(records, opts, nil, true)
}

// SummarizeOver summarises steps measured over a given wall time (a
// benchmarking tool's duration, an open-loop run), or, for a step that
// wall does not give, from its first send to its last completion.
func SummarizeOver(records []measure.Record, opts Options, wall map[int]float64) []measure.Step {
	return summarize(records, opts, wall, false)
}

// SummarizeOpen summarises the steps of an open loop (Poisson arrivals at
// a rate, with a cap on the requests in flight), each over its window:
// from the completion that ends its warm-up (the W-th completion, W its
// warm-up records) to its last completion, so that the N − W completions
// counted fall inside it; without warm-up, from its first send.
func SummarizeOpen(records []measure.Record, opts Options) []measure.Step {
	type key struct {
		c         int
		rate      float64
		cancelled bool
	}
	var steps []measure.Step
	if len(records) == 0 {
		return steps
	}
	by := measure.GroupRecords(records, func(r *measure.Record) key {
		return key{r.Step, r.RateRPS, r.ErrorClass == measure.ErrCancelled}
	})
	for k, rs := range by {
		if k.cancelled {
			continue
		}
		if s, ok := summarizeStep(k.c, rs, opts, openWall(rs), false); ok {
			s.RateRPS = k.rate
			steps = append(steps, s)
		}
	}
	slices.SortFunc(steps, func(a, b measure.Step) int {
		return cmp.Or(cmp.Compare(a.Concurrency, b.Concurrency), cmp.Compare(a.RateRPS, b.RateRPS))
	})
	return steps
}

// openWall is the window of an open-loop step's rows (SummarizeOpen); 0
// when it has none.
func openWall(rs []measure.Record) float64 {
	var ends []float64
	first, warm := math.Inf(1), 0
	for _, r := range rs {
		ends = append(ends, r.EndS())
		first = math.Min(first, r.StartS)
		if r.Warmup {
			warm++
		}
	}
	if len(ends) == 0 || warm >= len(ends) {
		return 0
	}
	slices.Sort(ends)
	start := first
	if warm > 0 {
		start = ends[warm-1]
	}
	return math.Max(0, ends[len(ends)-1]-start)
}

func summarize(records []measure.Record, opts Options, wall map[int]float64, closed bool) []measure.Step {
	type key struct {
		c         int
		rate      float64
		cancelled bool
	}
	if len(records) == 0 {
		return []measure.Step{}
	}
	by := measure.GroupRecords(records, func(r *measure.Record) key {
		return key{r.Step, r.RateRPS, r.ErrorClass == measure.ErrCancelled}
	})
	steps := make([]measure.Step, 0, len(by))
	for k, rs := range by {
		if k.cancelled {
			continue
		}
		if s, ok := summarizeStep(k.c, rs, opts, wall[k.c], closed); ok {
			s.RateRPS = k.rate
			steps = append(steps, s)
		}
	}
	slices.SortFunc(steps, func(a, b measure.Step) int {
		return cmp.Or(cmp.Compare(a.Concurrency, b.Concurrency), cmp.Compare(a.RateRPS, b.RateRPS))
	})
	return steps
}

// Provisional summarises the records of a closed-loop step that is still
// running, over the steady state measured so far: for deciding whether to
// measure it longer.
func Provisional(c int, records []measure.Record, opts Options) measure.Step {
	s := measure.Step{Concurrency: c}
	var rs []measure.Record
	for _, r := range records {
		if r.ErrorClass != measure.ErrCancelled {
			rs = append(rs, r)
		}
	}
	sc := &Scratch{}
	if a, b, ok := window(rs, c, true, sc); ok {
		st := measureWindow(rs, c, a, b, opts.Goal(), sc)
		s.WallS, s.GoodputRPS, s.ThroughputRPS, s.GoodputCI, s.Requests = b-a, st.goodput, st.throughput, st.goodputCI(), st.measured
	}
	return s
}

func summarizeStep(c int, rs []measure.Record, opts Options, wallS float64, closed bool) (measure.Step, bool) {
	s := measure.Step{Concurrency: c}
	first, last := math.Inf(1), math.Inf(-1)
	ttft, e2e, withRetries := make([]float64, 0, len(rs)), make([]float64, 0, len(rs)), make([]float64, 0, len(rs))
	var tpot []float64
	var good, outTokens int
	retried := false
	for _, r := range rs {
		s.RateLimited += r.RateLimitedAnswers()
		s.Answers += r.Answers()
		s.Refine = s.Refine || r.Refine
		if r.Warmup {
			continue
		}
		s.Requests++
		first = math.Min(first, r.StartS)
		last = math.Max(last, r.EndS())
		switch {
		case r.OK:
			s.OK++
			outTokens += r.OutputTokens
			ttft = append(ttft, r.TTFTMs)
			e2e = append(e2e, r.E2EMs)
			withRetries = append(withRetries, r.SlotMs())
			retried = retried || r.Attempts > 1
			if v, ok := r.TPOTMs(); ok {
				tpot = append(tpot, v)
			}
			if opts.Goal().Good(r) {
				good++
			}
		case r.ErrorClass == measure.ErrRateLimited || r.Status == 429:
			s.RateLimitedFailed++
		default:
			s.Errors++
		}
	}
	if s.Requests == 0 {
		return s, false
	}
	s.WallS = wallS
	steadyMeasured := false
	if closed {
		st, ok := steadyState(rs, c, opts.Goal())
		s.TooShort = !ok || s.Requests < MinAdaptive(c)
		if ok {
			steadyMeasured = true
			s.WallS, s.GoodputRPS, s.ThroughputRPS, s.OutputTPS, s.GoodputCI = st.b-st.a, st.goodput, st.throughput, st.outputTPS, st.goodputCI()
			s.WindowStartS, s.WindowEndS = st.a, st.b
		}
	}
	if s.WallS <= 0 && last > first {
		// A step without a steady state or a given wall time: the whole
		// span, for what it is worth.
		s.WallS = last - first
	}
	if !steadyMeasured && s.WallS > 0 {
		s.GoodputRPS = float64(good) / s.WallS
		s.ThroughputRPS = float64(s.OK) / s.WallS
		s.OutputTPS = float64(outTokens) / s.WallS
	}
	s.TTFTP50Ms, s.TTFTP90Ms, s.TTFTP95Ms, s.TTFTP99Ms, s.TTFTP95CI = percentiles(ttft)
	s.E2EP50Ms, s.E2EP90Ms, s.E2EP95Ms, s.E2EP99Ms, s.E2EP95CI = percentiles(e2e)
	s.TPOTP50Ms, s.TPOTP90Ms, s.TPOTP95Ms, s.TPOTP99Ms, s.TPOTP95CI = percentiles(tpot)
	if retried {
		_, _, s.E2EWithRetriesP95Ms, _, _ = percentiles(withRetries)
	}
	if !opts.SLO.IsZero() {
		s.SLO = Attainment(good, s.Requests)
	}
	return s, true
}

// percentiles returns p50, p90, p95, p99 (type 7, model.Quantile) and the
// interval of p95, or zeros.
func percentiles(xs []float64) (p50, p90, p95, p99 float64, ci95 *measure.Interval) {
	if len(xs) == 0 {
		return 0, 0, 0, 0, nil
	}
	slices.Sort(xs)
	if xs[len(xs)-1] <= 0 {
		return 0, 0, 0, 0, nil // not measured (a source without the figure)
	}
	return model.QuantileSorted(xs, 0.5), model.QuantileSorted(xs, 0.9), model.QuantileSorted(xs, 0.95),
		model.QuantileSorted(xs, 0.99), quantileCI(xs, 0.95)
}

// Analyze judges a ramp's steps. A step passes when its goodput grew by
// at least MinGainPct over the previous step (the first step is exempt)
// and its E2E p95 stayed under MaxP95Fraction of the deadline, goodput
// counting the requests within the deadline that, when an SLO is given,
// also met every one of its targets (the p95 rule stays the deadline's
// alone); a step with
// no successful response never passes (a step whose counts are unknown
// passes on its goodput alone). The knee is the last step before the
// first failing one, and later passing steps do not move it; when no step
// fails, the knee is the last step and a lower bound (KneeLowerBound),
// and when the steps judged measure one concurrency only there is none.
// knee_refined is sought only when the first failing step failed on its
// gain alone: then its throughput is the plateau. A step falls
// when its goodput is below the previous step's by more than
// CollapseTolerancePct and by more than both steps' intervals allow; the
// collapse point is the first step that falls. Steps too short for a
// steady state take no part. The ramp is quota-limited when the share of
// 429 answers rises with concurrency up to the first failing step (see
// judgeQuota).
func Analyze(steps []measure.Step, opts Options) measure.Result {
	opts = opts.WithDefaults()
	ss := slices.Clone(steps)
	slices.SortStableFunc(ss, func(a, b measure.Step) int { return cmp.Compare(a.Concurrency, b.Concurrency) })
	res := measure.Result{Steps: ss}
	if !opts.SLO.IsZero() {
		res.SLO = &opts.SLO
	}
	if len(ss) == 0 {
		res.Notes = append(res.Notes, "no steps to analyse")
		return res
	}
	var judged, measured []measure.Step
	for _, s := range ss {
		if s.Concurrency < 1 {
			// A load the file does not give and nothing estimates: the
			// knee's rules order steps by concurrency, and 0 is none.
			res.Notes = append(res.Notes, "a step of unknown concurrency is shown but not judged: the knee needs each step's concurrency")
			continue
		}
		if s.TooShort {
			res.Notes = append(res.Notes, fmt.Sprintf("the step at concurrency %d is too short for a steady state (%d measured requests; any step needs at least 2c + 10 = %d with all its slots busy after its warm-up): it is shown but not judged",
				s.Concurrency, s.Requests, MinAdaptive(s.Concurrency)))
			continue
		}
		measured = append(measured, s)
		if !s.Refine {
			judged = append(judged, s)
		}
	}
	setEfficiency(ss)
	if len(judged) == 0 {
		// The notes above say why each step was left out.
		res.Notes = append(res.Notes, "no step can be judged: no knee")
		return res
	}
	failed, plateau := -1, false
	for i, s := range judged {
		pass := (s.OK > 0 || s.CountsUnknown) && s.GoodputRPS > 0
		gained := true
		if i > 0 {
			prev := judged[i-1]
			need := prev.GoodputRPS * (1 + opts.MinGainPct/100)
			if s.GoodputRPS < need {
				pass, gained = false, false
			}
			if gainAmbiguous(prev, s, opts.MinGainPct) {
				res.Ambiguous = ptr(s.Concurrency)
			}
		}
		inTime := opts.DeadlineMs <= 0 || s.E2EP95Ms < opts.MaxP95Fraction*opts.DeadlineMs
		if !inTime {
			pass = false
		}
		if !pass {
			failed = i
			// Its throughput is a plateau when it failed on the gain
			// alone; a step that failed on its p95 may still be growing.
			plateau = !gained && inTime && (s.OK > 0 || s.CountsUnknown)
			break
		}
	}
	switch {
	case failed == -1 && !severalConcurrencies(judged):
		// One concurrency shows no growth to judge: the knee, where
		// throughput stops growing, may lie anywhere.
		res.Notes = append(res.Notes, fmt.Sprintf("one concurrency only (%d): no knee; a knee needs a ramp of two concurrencies or more", judged[0].Concurrency))
	case failed == -1:
		// No step failed: the knee was not reached, only passed by every
		// step measured, so it is a lower bound.
		last := judged[len(judged)-1].Concurrency
		res.Knee, res.KneeLowerBound = ptr(last), true
		res.Notes = append(res.Notes, fmt.Sprintf("no step failed the knee rule: the knee is a lower bound, knee ≥ %d; probe to higher concurrency to find it", last))
	case failed > 0:
		res.Knee = ptr(judged[failed-1].Concurrency)
		res.FirstFailing = ptr(judged[failed].Concurrency)
	default:
		res.FirstFailing = ptr(judged[0].Concurrency)
	}
	for i := 1; i < len(judged); i++ {
		if Fell(judged[i-1], judged[i], opts.CollapseTolerancePct) {
			res.Collapse = ptr(judged[i].Concurrency)
			break
		}
	}
	if failed > 0 && plateau {
		refineKnee(&res, measured, judged[failed])
	}
	judgeQuota(&res, judged, failed)
	if fit, ok := fitUSL(judged); ok {
		top := slices.MaxFunc(judged, func(a, b measure.Step) int { return cmp.Compare(a.Concurrency, b.Concurrency) }).Concurrency
		fit.PeakBeyondRange = fit.Peak != nil && *fit.Peak > measure.PeakRangeFactor*float64(top)
		res.USL = &fit
	}
	switch {
	case opts.DeadlineMs <= 0 && opts.SLO.IsZero():
		res.Notes = append(res.Notes, "no deadline given: goodput counts every successful response and the knee ignores p95")
	case opts.DeadlineMs <= 0:
		res.Notes = append(res.Notes, "no deadline given: goodput counts the successful responses that met every SLO target, and the knee ignores p95")
	}
	return res
}

// severalConcurrencies reports whether the steps measure more than one
// concurrency.
func severalConcurrencies(ss []measure.Step) bool {
	for _, s := range ss[1:] {
		if s.Concurrency != ss[0].Concurrency {
			return true
		}
	}
	return false
}

// Fell reports whether goodput fell from step a to step b: by more than
// tolerancePct of a's goodput, and, when both carry intervals, by more
// than the intervals allow (b's upper bound under a's lower bound). A
// plateau that wobbles within its noise does not fall.
func Fell(a, b measure.Step, tolerancePct float64) bool {
	if !(b.GoodputRPS < a.GoodputRPS*(1-tolerancePct/100)) {
		return false
	}
	if a.GoodputCI != nil && b.GoodputCI != nil && b.GoodputCI.Hi >= a.GoodputCI.Lo {
		return false
	}
	return true
}

// setEfficiency sets each closed-loop step's scaling efficiency against
// the step at concurrency 1.
func setEfficiency(ss []measure.Step) {
	i := slices.IndexFunc(ss, func(s measure.Step) bool { return s.Concurrency == 1 && s.RateRPS == 0 && !s.TooShort })
	if i < 0 || !(ss[i].ThroughputRPS > 0) {
		return
	}
	x1 := ss[i].ThroughputRPS
	for j := range ss {
		if ss[j].RateRPS == 0 && ss[j].ThroughputRPS > 0 {
			ss[j].Efficiency = signed.Round(ss[j].ThroughputRPS/(float64(ss[j].Concurrency)*x1), 4)
		}
	}
}

// refineKnee finds knee_refined among the measured steps up to the first
// failing one, f, whose throughput X(f) is the plateau: the smallest
// concurrency c with
//
//	X(c) ≥ X(f)·(1 − h(c)),   h(c) = 1/(2(c+1))   (halfSlot)
//
// An endpoint of k slots that scales linearly up to them carries
// X(c) = X(f)·c/k below its knee, at most X(f)·c/(c+1) since k ≥ c+1, and
// X(f) from it on: the threshold lies halfway between the two, so that a
// step is judged with the same margin, h(c), on either side (at c = 1 of
// a 2-slot endpoint, half the plateau against the threshold of three
// quarters). The resolution is the gap to the largest concurrency known
// to fall short: the measured step below it, or above that step what its
// throughput bounds (see shortOfPlateau). The bracket can be halved while
// it spans more than one and every refinement step's noise (goodput
// interval, relative half-width, plus the plateau's) stays under the half
// slot it must resolve.
func refineKnee(res *measure.Result, measured []measure.Step, f measure.Step) {
	b, ok := bracketKnee(measured, f)
	if !ok {
		return
	}
	res.KneeRefined, res.KneeResolution = ptr(b.hi), ptr(b.hi-b.lo)
	if b.lo > b.below.Concurrency {
		res.Notes = append(res.Notes, fmt.Sprintf("knee_refined %d to within %d: %s in flight cannot reach the plateau, since a closed loop of c carries at most c·X(%d)/%d = c·%.4g req/s (a request takes no less time with more in flight)",
			b.hi, b.hi-b.lo, span(b.below.Concurrency+1, b.lo), b.below.Concurrency, b.below.Concurrency, b.below.ThroughputRPS/float64(b.below.Concurrency)))
	}
	if !b.resolvable && b.hi-b.lo > 1 {
		res.Notes = append(res.Notes, fmt.Sprintf("knee_refined %d to within %d: the refinement steps' noise is more than half a slot, so the bisection stopped", b.hi, b.hi-b.lo))
	}
}

// span names the concurrencies lo..hi.
func span(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

// kneeBracket is the refinement's bracket (lo, hi]: hi the smallest
// measured concurrency on the plateau, below the measured step under it
// and lo the largest concurrency known to fall short of the plateau (below
// itself, or above it as far as its throughput bounds); resolvable while
// every refinement step's noise, with the plateau's, stays under 1/(2c)
// (NextRefinement).
type kneeBracket struct {
	lo, hi     int
	below      measure.Step
	resolvable bool
}

// bracketKnee brackets the knee among the measured steps up to the first
// failing step f; false when none reaches the plateau.
func bracketKnee(measured []measure.Step, f measure.Step) (kneeBracket, bool) {
	plat := f.ThroughputRPS
	if !(plat > 0) {
		return kneeBracket{}, false
	}
	reaches := func(s measure.Step) bool {
		return s.ThroughputRPS >= plat*(1-halfSlot(s.Concurrency))
	}
	b := kneeBracket{resolvable: true}
	for _, s := range measured {
		if s.Concurrency > f.Concurrency || s.RateRPS != 0 {
			continue
		}
		if s.Refine && s.GoodputCI.HalfWidthRel(s.GoodputRPS)+f.GoodputCI.HalfWidthRel(plat) >= 1/(2*float64(s.Concurrency)) {
			b.resolvable = false
		}
		if b.hi == 0 && reaches(s) {
			b.hi = s.Concurrency
		}
		if b.hi == 0 {
			b.lo, b.below = s.Concurrency, s
		}
	}
	if b.hi == 0 {
		return b, false
	}
	for b.lo > 0 && b.lo+1 < b.hi && shortOfPlateau(b.below, f, b.lo+1) {
		b.lo++
	}
	return b, true
}

// shortOfPlateau reports whether concurrency c, above the measured step
// lo, falls short of the plateau of f whatever it would measure. A closed
// loop of c carries X(c) = c/E[S(c)] (Little's Law), and a request takes
// no less time with more in flight, E[S(c)] ≥ E[S(lo)], so
//
//	X(c) ≤ c·X(lo)/lo
//
// and c cannot reach the plateau when even that bound, with lo's goodput
// interval on its upper side, stays under X(f)·(1 − h(c)) with f's on its
// lower side. Steps without intervals bound nothing.
func shortOfPlateau(lo, f measure.Step, c int) bool {
	up := lo.GoodputCI.HalfWidthRel(lo.GoodputRPS)
	down := f.GoodputCI.HalfWidthRel(f.GoodputRPS)
	if math.IsInf(up, 0) || math.IsInf(down, 0) || lo.Concurrency < 1 {
		return false
	}
	most := float64(c) * lo.ThroughputRPS * (1 + up) / float64(lo.Concurrency)
	return most < f.ThroughputRPS*(1-down)*(1-halfSlot(c))
}

// halfSlot is h(c) = 1/(2(c+1)), the share of the plateau by which a step
// of concurrency c is judged on it or short of it (refineKnee): half the
// gap between c of at least c+1 slots busy, c/(c+1) of the plateau, and
// the plateau.
func halfSlot(c int) float64 { return 1 / (2 * float64(c+1)) }

// NextRefinement is what a knee search's refinement measures next in a
// result of Analyze: the concurrency, and the relative half-width of the
// goodput interval at which its step has measured enough (1/(2c), within
// a factor (c+1)/c of the margin h(c) it is judged with, less the
// plateau's own noise); false when the
// bracket is down to one, or the noise of the steps measured cannot tell
// its neighbours apart. The first refinement step measures the smallest
// concurrency the bracket leaves open, lo + 1: where the knee lies when
// the endpoint keeps scaling as it did at the measured step below it,
// the commonest case, which that one step then settles; later steps
// bisect what is left.
func NextRefinement(res measure.Result) (c int, precision float64, ok bool) {
	if res.FirstFailing == nil || res.KneeRefined == nil {
		return 0, 0, false
	}
	var measured []measure.Step
	var f *measure.Step
	refined := false
	for i, s := range res.Steps {
		if s.TooShort {
			continue
		}
		measured = append(measured, s)
		refined = refined || s.Refine
		if !s.Refine && s.Concurrency == *res.FirstFailing && f == nil {
			f = &res.Steps[i]
		}
	}
	if f == nil {
		return 0, 0, false
	}
	b, ok := bracketKnee(measured, *f)
	if !ok || !b.resolvable || b.hi-b.lo <= 1 {
		return 0, 0, false
	}
	c = (b.lo + b.hi + 1) / 2
	if !refined {
		c = b.lo + 1
	}
	precision = 1/(2*float64(c)) - f.GoodputCI.HalfWidthRel(f.GoodputRPS)
	if !(precision > 0) {
		return 0, 0, false
	}
	return c, precision, true
}

// SearchRefined is the knee_refined that a plan may budget with, with its
// resolution: that of a knee search, which its refinement narrowed down,
// or of any ramp whose steps pin it to one concurrency (resolution 1).
// It is nil for a ramp without refinement steps whose knee_refined is only
// as fine as its steps, which its knee already says. It is the refined
// knee that the latency block and the record card carry.
func SearchRefined(r measure.Result) (knee, resolution *int) {
	if r.KneeRefined == nil || r.KneeResolution == nil {
		return nil, nil
	}
	if *r.KneeResolution > 1 && !slices.ContainsFunc(r.Steps, func(s measure.Step) bool { return s.Refine }) {
		return nil, nil
	}
	return r.KneeRefined, r.KneeResolution
}

// GainAmbiguous reports whether the gain rule's threshold lies inside the
// range the two steps' intervals allow for the gain: the verdict rests on
// noise, and measuring s longer may change it.
func GainAmbiguous(prev, s measure.Step, minGainPct float64) bool {
	return gainAmbiguous(prev, s, minGainPct)
}

// gainAmbiguous reports whether the gain rule's threshold lies inside the
// range the two steps' intervals allow for the gain.
func gainAmbiguous(prev, s measure.Step, minGainPct float64) bool {
	if prev.GoodputCI == nil || s.GoodputCI == nil || prev.GoodputCI.Lo <= 0 {
		return false
	}
	need := 1 + minGainPct/100
	lo, hi := s.GoodputCI.Lo/prev.GoodputCI.Hi, s.GoodputCI.Hi/prev.GoodputCI.Lo
	return lo < need && need <= hi
}

func fitUSL(ss []measure.Step) (measure.USLFit, bool) {
	var n, x []float64
	for _, s := range ss {
		if s.ThroughputRPS > 0 {
			n = append(n, float64(s.Concurrency))
			x = append(x, s.ThroughputRPS)
		}
	}
	u, err := model.FitUSL(n, x)
	if err != nil {
		return measure.USLFit{}, false
	}
	fit := measure.USLFit{USL: u}
	if p, ok := u.Peak(); ok {
		fit.Peak = &p
	}
	return fit, true
}

// curveSteps are the steps that make curve points: measured in a steady
// state (or taken as the source gave them), with a known concurrency,
// successful responses and a measurable TTFT and TPOT; of several steps at
// one concurrency (open-loop rates), the first, which has the lowest rate.
func curveSteps(r measure.Result) []measure.Step {
	var out []measure.Step
	seen := map[int]bool{}
	for _, s := range r.Steps {
		if s.TooShort || s.Concurrency < 1 || seen[s.Concurrency] || (s.OK == 0 && !s.CountsUnknown) || s.TTFTP50Ms <= 0 || s.TPOTP50Ms <= 0 || openAtCap(s) {
			continue
		}
		seen[s.Concurrency] = true
		out = append(out, s)
	}
	return out
}

// Latency converts the result into a scenario latency block: one curve
// point per step that curveSteps keeps, the knee (marked as a lower bound
// when no step failed) and a search's knee_refined. Each latency series
// is made non-decreasing over concurrency by isotonic regression weighted
// by the step's successful requests (one for a step without counts): the
// least-squares monotone fit, so that a noisy step is averaged with its
// neighbours instead of lifting every later one.
//
// A result of a mode that measures a prompt's cost (Mode set) gives no
// curve, its steps mixing prompts of several shapes: its block is
// PromptLatency's.
func Latency(r measure.Result) (scenario.Latency, error) {
	if r.Mode != "" {
		if l, ok := PromptLatency(r); ok {
			return l, nil
		}
		return scenario.Latency{}, fmt.Errorf("the %s run measured no prompt cost to give a scenario", r.Mode)
	}
	var l scenario.Latency
	ss := curveSteps(r)
	if len(ss) == 0 {
		if len(r.Steps) > 0 && !slices.ContainsFunc(r.Steps, func(s measure.Step) bool { return !openAtCap(s) }) {
			return l, fmt.Errorf("an open loop's steps are offered rates under a cap of %d in flight, not concurrencies a pool holds, so there is no curve: a ladder (--steps) or a search measures one", r.Steps[0].Concurrency)
		}
		if len(r.Steps) > 0 && !slices.ContainsFunc(r.Steps, func(s measure.Step) bool { return !s.TooShort }) {
			return l, fmt.Errorf("every step is too short for a steady state, so there is no curve")
		}
		return l, fmt.Errorf("no step has successful responses with at least two output tokens, so there is no curve")
	}
	ws := make([]float64, len(ss))
	for i, s := range ss {
		ws[i] = float64(max(1, s.OK))
	}
	series := func(get func(measure.Step) float64) []float64 {
		ys := make([]float64, len(ss))
		for i, s := range ss {
			ys[i] = get(s)
		}
		return isotonic(ys, ws)
	}
	t50, t95 := series(func(s measure.Step) float64 { return s.TTFTP50Ms }), series(func(s measure.Step) float64 { return s.TTFTP95Ms })
	v50, v95 := series(func(s measure.Step) float64 { return s.TPOTP50Ms }), series(func(s measure.Step) float64 { return s.TPOTP95Ms })
	e50, e95 := series(func(s measure.Step) float64 { return s.E2EP50Ms }), series(func(s measure.Step) float64 { return s.E2EP95Ms })
	for i, s := range ss {
		l.Curve = append(l.Curve, scenario.CurvePoint{
			Concurrency:     s.Concurrency,
			TTFTP50Ms:       signed.Round(t50[i], 2),
			TTFTP95Ms:       signed.Round(t95[i], 2),
			TPOTP50Ms:       signed.Round(v50[i], 3),
			TPOTP95Ms:       signed.Round(v95[i], 3),
			E2EP50Ms:        signed.Round(e50[i], 1),
			E2EP95Ms:        signed.Round(e95[i], 1),
			ThroughputRPS:   signed.Round(s.ThroughputRPS, 4),
			OutputTPS:       signed.Round(s.OutputTPS, 2),
			GoodputRPS:      signed.Round(s.GoodputRPS, 4),
			ErrorRate:       signed.Round(ratio(s.Errors, s.Requests), 4),
			RateLimitedRate: signed.Round(ratio(s.RateLimited, s.Answers), 4),
			Requests:        s.Requests,
		})
	}
	l.Knee, l.KneeLowerBound = r.Knee, r.KneeLowerBound && r.Knee != nil
	l.KneeRefined, _ = SearchRefined(r)
	return l, nil
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return math.Min(1, float64(a)/float64(b))
}

func ptr[T any](v T) *T { return &v }

// openAtCap reports whether a step is an open loop's at an offered rate
// whose concurrency is its cap on requests in flight rather than what it
// held: its throughput is the rate offered, not what that concurrency
// carries, so it makes no curve point (a curve of it told a plan that 8
// slots carry the 14.7 req/s a step at 20 req/s got, where they carry
// 144.6). A step whose concurrency is estimated from what it held
// (Little's law, an imported rate run) is a point like any other.
func openAtCap(s measure.Step) bool { return s.RateRPS > 0 && !s.ConcurrencyEstimated }
