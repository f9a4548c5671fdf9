package api

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/app"
	"github.com/plannerdev/planner/internal/importer"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/scenario"
)

// AnalysisRequest is the body of POST /v1/analyses: exactly one of rows,
// steps or file, and the judgement settings.
type AnalysisRequest struct {
	Rows                 []AnalysisRow    `json:"rows,omitempty" maxItems:"100000" doc:"Per-request rows of a ramp (the columns of requests.csv); the steps are summarised from them."`
	Steps                []AnalysisStep   `json:"steps,omitempty" maxItems:"256" doc:"Per-step summaries of a ramp, when the rows are not at hand."`
	File                 *AnalysisFile    `json:"file,omitempty" doc:"A result file of a benchmarking tool (vLLM bench serve, GuideLLM, AIPerf, GenAI-Perf, llmperf) or a ramp CSV, detected by content."`
	DeadlineMs           float64          `json:"deadline_ms,omitempty" minimum:"0" maximum:"3600000" doc:"A response is good only when it ends within this; 0 or absent: no deadline (goodput is throughput and the knee ignores p95)."`
	MinGainPct           float64          `json:"min_gain_pct,omitempty" minimum:"0" maximum:"1000" doc:"Knee rule: goodput must grow at least this much per step; default 10."`
	MaxP95Fraction       float64          `json:"max_p95_fraction,omitempty" minimum:"0" maximum:"10" doc:"Knee rule: E2E p95 must stay under this fraction of the deadline; default 0.6."`
	CollapseTolerancePct float64          `json:"collapse_tolerance_pct,omitempty" minimum:"0" maximum:"99" doc:"Goodput must fall by more than this percentage, and beyond both steps' intervals, to count as falling (collapse); default 5."`
	AllowMixed           bool             `json:"allow_mixed,omitempty" doc:"Analyse a file whose runs do not describe one deployment anyway, with a warning in the notes, instead of refusing it."`
	SLO                  *measure.Targets `json:"slo,omitempty" doc:"SLO targets: goodput counts only the requests that met every target given at once (and the deadline), each step reports its attainment, and the knee's gain rule judges that goodput. A file without per-request rows gives an estimated attainment, an upper bound (docs/import.md)."`
}

// AnalysisRow is one request of a ramp (measure.Record); only step and
// ok are required.
type AnalysisRow struct {
	Step             int     `json:"step" minimum:"1" maximum:"100000" doc:"Concurrency of the request's step."`
	Index            int     `json:"idx,omitempty" minimum:"0"`
	StartS           float64 `json:"start_s,omitempty" minimum:"0" maximum:"1e9" doc:"Send time, seconds from the start of the run."`
	AckMs            float64 `json:"ack_ms,omitempty" minimum:"0" maximum:"1e9"`
	TTFTMs           float64 `json:"ttft_ms,omitempty" minimum:"0" maximum:"1e9"`
	E2EMs            float64 `json:"e2e_ms,omitempty" minimum:"0" maximum:"1e9"`
	OutputTokens     int     `json:"output_tokens,omitempty" minimum:"0" maximum:"100000000"`
	InputTokens      int     `json:"input_tokens,omitempty" minimum:"0" maximum:"100000000"`
	OutputEstimated  bool    `json:"output_estimated,omitempty"`
	Status           int     `json:"status,omitempty" minimum:"0" maximum:"599" doc:"HTTP status, 100 to 599; 0 when no response arrived."`
	ErrorClass       string  `json:"error,omitempty" enum:"timeout,429,5xx,4xx,transport,bad_stream,cancelled" doc:"Empty on success."`
	Attempts         int     `json:"attempts,omitempty" minimum:"0" maximum:"1000"`
	RetryAfterMs     float64 `json:"retry_after_ms,omitempty" minimum:"0" maximum:"1e9"`
	OK               bool    `json:"ok" doc:"HTTP 200 with non-empty output; a row that is ok has no error and, when given, a 2xx status."`
	Warmup           bool    `json:"warmup,omitempty" doc:"Left out of the summaries."`
	E2EWithRetriesMs float64 `json:"e2e_with_retries_ms,omitempty" minimum:"0" maximum:"1e9" doc:"From the first send, waits before retries included; default e2e_ms."`
	RateRPS          float64 `json:"rate_rps,omitempty" minimum:"0" maximum:"1e9" doc:"Offered rate of an open-loop step; 0 in a closed loop."`
	Refine           bool    `json:"refine,omitempty" doc:"A row of a knee search's refinement step."`
	ServedModel      string  `json:"served_model,omitempty" maxLength:"1024" doc:"What the answer named as its model; not judged here."`
	Conn             string  `json:"conn,omitempty" enum:"new,reused" doc:"Whether the request opened a new connection or reused one; not judged here."`
	ConnWaitMs       float64 `json:"conn_wait_ms,omitempty" minimum:"0" maximum:"1e9"`
	DNSMs            float64 `json:"dns_ms,omitempty" minimum:"0" maximum:"1e9"`
	ConnectMs        float64 `json:"connect_ms,omitempty" minimum:"0" maximum:"1e9"`
	TLSMs            float64 `json:"tls_ms,omitempty" minimum:"0" maximum:"1e9"`
	TTFBMs           float64 `json:"ttfb_ms,omitempty" minimum:"0" maximum:"1e9"`
	CachedTokens     int     `json:"cached_tokens,omitempty" minimum:"0" maximum:"100000000" doc:"Input tokens served from the endpoint's prompt cache (usage.prompt_tokens_details.cached_tokens)."`
	PrefixTokens     int     `json:"prefix_tokens,omitempty" minimum:"0" maximum:"100000000" doc:"Tokens at the start of the prompt that an earlier request of the run had already sent; not judged here."`
	Task             int     `json:"task,omitempty" minimum:"0" maximum:"100000000" doc:"A conversation's task, from 1; 0 outside one. Not judged here."`
	Call             int     `json:"call,omitempty" minimum:"0" maximum:"100000" doc:"A conversation call's position in its task, from 1; 0 outside one. Not judged here."`
}

// AnalysisStep is one step of a ramp (measure.Step); concurrency and
// goodput_rps are required.
type AnalysisStep struct {
	Concurrency   int               `json:"concurrency" minimum:"1" maximum:"100000"`
	RateRPS       float64           `json:"rate_rps,omitempty" minimum:"0" maximum:"1e9"`
	Requests      int               `json:"requests,omitempty" minimum:"0"`
	OK            int               `json:"ok,omitempty" minimum:"0"`
	RateLimited   int               `json:"rate_limited,omitempty" minimum:"0" doc:"429 answers, retried ones included."`
	Answers       int               `json:"answers,omitempty" minimum:"0" doc:"HTTP answers, retries included; default requests. The 429 rate is rate_limited / answers."`
	Errors        int               `json:"errors,omitempty" minimum:"0"`
	WallS         float64           `json:"wall_s,omitempty" minimum:"0" maximum:"1e9"`
	GoodputRPS    float64           `json:"goodput_rps" minimum:"0" maximum:"1e9"`
	ThroughputRPS float64           `json:"throughput_rps,omitempty" minimum:"0" maximum:"1e9"`
	OutputTPS     float64           `json:"output_tps,omitempty" minimum:"0" maximum:"1e12"`
	TTFTP50Ms     float64           `json:"ttft_p50_ms,omitempty" minimum:"0" maximum:"1e9"`
	TTFTP95Ms     float64           `json:"ttft_p95_ms,omitempty" minimum:"0" maximum:"1e9"`
	E2EP50Ms      float64           `json:"e2e_p50_ms,omitempty" minimum:"0" maximum:"1e9"`
	E2EP95Ms      float64           `json:"e2e_p95_ms,omitempty" minimum:"0" maximum:"1e9"`
	TPOTP50Ms     float64           `json:"tpot_p50_ms,omitempty" minimum:"0" maximum:"1e9"`
	TPOTP95Ms     float64           `json:"tpot_p95_ms,omitempty" minimum:"0" maximum:"1e9"`
	GoodputCI     *measure.Interval `json:"goodput_ci,omitempty" doc:"95 % interval of the goodput, when known: the collapse rule then looks past the noise."`
}

// AnalysisFile is an uploaded result file.
type AnalysisFile struct {
	Name     string `json:"name" minLength:"1" maxLength:"256" doc:"The file's name; some formats are told apart by it (profile_export.jsonl)." example:"profile_export_aiperf.json"`
	Content  string `json:"content" minLength:"1" doc:"The file's content, as text or, with encoding base64, base64-encoded; within limits.max_analysis_body_bytes (64 MiB by default), the body limit of this operation alone, and with at most 1,000,000 request rows (a 422 at body.file beyond)."`
	Encoding string `json:"encoding,omitempty" enum:"text,base64" default:"text"`
	Format   string `json:"format,omitempty" maxLength:"32" doc:"A format id to skip detection (as planner import --format takes); default: detect by content."`
}

// AnalysisResponse is the analysis of a ramp (the engine's result, as
// planner import writes it) with the format read and the latency block
// it gives.
type AnalysisResponse struct {
	Format string `json:"format" doc:"rows, steps, or the format of the file as detected."`
	measure.Result
	Latency *scenario.Latency `json:"latency,omitempty" doc:"The latency block to put in a scenario: the curve and the knee."`
}

type analysisInput struct {
	RawBody []byte
	Body    AnalysisRequest
}

var analysisSchema = sync.OnceValue(schemaOf[AnalysisRequest])

// Resolve requires exactly one of rows, steps and file (an empty list of
// rows or steps named as such), an SLO only with
// rows or a file, a file's format known, and steps that a probe could have
// measured (stepRules).
func (in *analysisInput) Resolve(huma.Context) []error {
	n := 0
	for _, given := range []bool{len(in.Body.Rows) > 0, len(in.Body.Steps) > 0, in.Body.File != nil} {
		if given {
			n++
		}
	}
	var rules []rule
	switch {
	case n == 0 && in.Body.Rows != nil:
		rules = append(rules, rule{location: "body.rows", message: "is empty: give at least one row"})
	case n == 0 && in.Body.Steps != nil:
		rules = append(rules, rule{location: "body.steps", message: "is empty: give at least one step"})
	case n != 1:
		rules = append(rules, rule{location: "body", message: "give exactly one of rows, steps or file"})
	}
	if in.Body.SLO != nil && !in.Body.SLO.IsZero() && len(in.Body.Steps) > 0 {
		rules = append(rules, rule{location: "body.slo", message: "judges per-request rows or a file; steps carry their own goodput_rps, which no SLO can recount"})
	}
	if f := in.Body.File; f != nil && !importer.KnownFormat(f.Format) {
		rules = append(rules, rule{location: "body.file.format", message: "must be auto or one of " + strings.Join(importer.Formats(), ", ")})
	}
	rules = append(rules, stepRules(in.Body.Steps)...)
	rules = append(rules, rowRules(in.Body.Rows)...)
	rules = append(rules, rowSLORules(in.Body.Rows, in.Body.SLO)...)
	if len(rules) == 0 {
		return nil
	}
	return uncoveredRules(in.RawBody, analysisSchema(), rules)
}

// stepRules are the problems of steps no run could have measured: a p95
// below its p50 (the latency block made of them would be refused by a
// plan), an E2E below its TTFT, more requests answered ok, 429 or in
// error than were sent or answered, a goodput above the throughput or
// without a request ok, an interval upside down, and two closed-loop
// steps at one concurrency (or open-loop steps at one rate), which would
// be summarised as one.
func stepRules(steps []AnalysisStep) []rule {
	var rules []rule
	closed, open := map[int]int{}, map[float64]int{}
	for i, st := range steps {
		at := func(f string) string { return fmt.Sprintf("body.steps[%d].%s", i, f) }
		for _, p := range []struct {
			name     string
			p50, p95 float64
		}{{"ttft", st.TTFTP50Ms, st.TTFTP95Ms}, {"e2e", st.E2EP50Ms, st.E2EP95Ms}, {"tpot", st.TPOTP50Ms, st.TPOTP95Ms}} {
			if p.p95 > 0 && p.p95 < p.p50 {
				rules = append(rules, rule{location: at(p.name + "_p95_ms"), message: "must be >= " + p.name + "_p50_ms"})
			}
		}
		if st.Requests > 0 && st.OK+st.Errors > st.Requests {
			rules = append(rules, rule{location: at("ok"), message: "ok and errors together must be at most requests"})
		}
		if answers := cmp.Or(st.Answers, st.Requests); answers > 0 && st.RateLimited > answers {
			rules = append(rules, rule{location: at("rate_limited"), message: "must be at most answers (requests when answers is not given)"})
		} else if answers > 0 && st.OK > answers {
			rules = append(rules, rule{location: at("ok"), message: "must be at most answers (requests when answers is not given)"})
		}
		for _, p := range []struct {
			name      string
			ttft, e2e float64
		}{{"p50", st.TTFTP50Ms, st.E2EP50Ms}, {"p95", st.TTFTP95Ms, st.E2EP95Ms}} {
			if endsBeforeFirstToken(p.ttft, p.e2e) {
				rules = append(rules, rule{location: at("e2e_" + p.name + "_ms"), message: "must be >= ttft_" + p.name + "_ms: " + afterFirstToken})
			}
		}
		switch {
		case st.ThroughputRPS > 0 && st.GoodputRPS > st.ThroughputRPS:
			rules = append(rules, rule{location: at("goodput_rps"), message: "must be at most throughput_rps: goodput counts requests that completed"})
		case st.Requests > 0 && st.OK == 0 && st.GoodputRPS > 0:
			rules = append(rules, rule{location: at("goodput_rps"), message: "must be 0 when no request was ok"})
		}
		if ci := st.GoodputCI; ci != nil && ci.Lo > ci.Hi {
			rules = append(rules, rule{location: at("goodput_ci"), message: "lo must be at most hi"})
		}
		if st.RateRPS > 0 {
			if j, ok := open[st.RateRPS]; ok {
				rules = append(rules, rule{location: at("rate_rps"), message: fmt.Sprintf("steps[%d] has the same rate: give each rate once", j)})
			}
			open[st.RateRPS] = i
		} else {
			if j, ok := closed[st.Concurrency]; ok {
				rules = append(rules, rule{location: at("concurrency"), message: fmt.Sprintf("steps[%d] has the same concurrency: give each concurrency once", j)})
			}
			closed[st.Concurrency] = i
		}
	}
	return rules
}

// rowSLORules refuse a TTFT or TPOT target that the rows cannot judge,
// since none that is ok has the figure (a ttft_ms; a ttft_ms with
// output_tokens): every request would count as meeting it, as planner
// import refuses such a target of a file's rows. Rows none of which is ok
// met no target, which their attainment says.
func rowSLORules(rows []AnalysisRow, slo *measure.Targets) []rule {
	if len(rows) == 0 || slo == nil {
		return nil
	}
	ok, ttft, tokens := false, false, false
	for _, r := range rows {
		if r.OK {
			ok = true
			ttft = ttft || r.TTFTMs > 0
			tokens = tokens || (r.TTFTMs > 0 && r.OutputTokens > 0)
		}
	}
	var rules []rule
	if ok && slo.TTFTMs > 0 && !ttft {
		rules = append(rules, rule{location: "body.slo.ttft_ms", message: "cannot be judged: no row that is ok has a ttft_ms, so every request would count as meeting it; leave the target out"})
	}
	if ok && slo.TPOTMs > 0 && !tokens {
		rules = append(rules, rule{location: "body.slo.tpot_ms", message: "cannot be judged: no row that is ok has a ttft_ms and output_tokens, so every request would count as meeting it; leave the target out"})
	}
	return rules
}

// afterFirstToken is why an E2E below its TTFT is refused, in the rows
// and in the steps alike.
const afterFirstToken = "a request ends after its first token"

// endsBeforeFirstToken reports an E2E below its TTFT, both given: no
// request, and so no percentile of requests, ends before its first token.
func endsBeforeFirstToken(ttftMs, e2eMs float64) bool {
	return ttftMs > 0 && e2eMs > 0 && e2eMs < ttftMs
}

// rowRules are the problems of rows no request could have had: an E2E
// below its TTFT (the steps' rule, row by row), and a row that is ok
// (an answer of HTTP 200 with output) but has an error class or a status
// that is not 2xx, which the summaries would count as a success and as a
// 429 or an error at once. A row's step must be a concurrency, at least
// 1, which the schema says.
func rowRules(rows []AnalysisRow) []rule {
	var rules []rule
	for i, r := range rows {
		if endsBeforeFirstToken(r.TTFTMs, r.E2EMs) {
			rules = append(rules, rule{location: fmt.Sprintf("body.rows[%d].e2e_ms", i), message: "must be >= ttft_ms: " + afterFirstToken})
		}
		if r.Status > 0 && r.Status < 100 {
			rules = append(rules, rule{location: fmt.Sprintf("body.rows[%d].status", i),
				message: fmt.Sprintf("%d is not an HTTP status: one is 100 to 599, with 0 when no answer arrived", r.Status)})
		}
		if !r.OK {
			continue
		}
		if r.ErrorClass != "" {
			rules = append(rules, rule{location: fmt.Sprintf("body.rows[%d].error", i),
				message: "a row that is ok has no error class: leave error out, or set ok to false"})
		}
		if r.Status != 0 && (r.Status < 200 || r.Status > 299) {
			rules = append(rules, rule{location: fmt.Sprintf("body.rows[%d].status", i),
				message: fmt.Sprintf("a row that is ok was answered 2xx, not %d: set ok to false with its error class", r.Status)})
		}
	}
	return rules
}

type analysisOutput struct {
	Body *AnalysisResponse
}

func (s *Server) registerAnalyses() {
	op := huma.Operation{
		OperationID: "create-analysis",
		Method:      http.MethodPost,
		Path:        "/v1/analyses",
		Summary:     "Analyse a measured ramp",
		Description: "Judges a concurrency ramp measured elsewhere: per-request rows, per-step summaries, or a " +
			"result file of vLLM bench serve, GuideLLM, AIPerf, GenAI-Perf, llmperf or a ramp CSV (detected by " +
			"content). Rows are summarised as the probe summarises them (a closed-loop step in its steady " +
			"state, with intervals; a step with fewer than 2c + 10 measured requests is shown but not judged). " +
			"Returns the step table, the knee and the collapse point judged with the noise in mind, " +
			"knee_refined, quota_limited, the Universal Scalability Law fit, notes on every mapping made, and " +
			"the latency block to put in a scenario (docs/probe.md and docs/import.md hold the rules). A file " +
			"that cannot be read, or whose runs do not describe one deployment, gets a 422 at body.file saying " +
			"what is wrong.",
		Tags:   []string{tagAnalyses},
		Errors: errorStatuses,
		// A result file runs to tens of megabytes: this operation alone
		// takes bodies up to limits.max_analysis_body_bytes.
		MaxBodyBytes: s.maxAnalysisBody + 1,
	}
	register(s, op, s.createAnalysis)
	withExamples(s.OpenAPI(), op.Path, examplesOf[AnalysisResponse](op.OperationID))
}

func (s *Server) createAnalysis(_ context.Context, in *analysisInput) (*analysisOutput, error) {
	req := in.Body
	opts := analysis.Options{DeadlineMs: req.DeadlineMs, MinGainPct: req.MinGainPct, MaxP95Fraction: req.MaxP95Fraction,
		CollapseTolerancePct: req.CollapseTolerancePct}
	if req.SLO != nil {
		opts.SLO = *req.SLO
	}
	out := &AnalysisResponse{}
	switch {
	case req.File != nil:
		data := []byte(req.File.Content)
		if req.File.Encoding == "base64" {
			var err error
			if data, err = base64.StdEncoding.DecodeString(req.File.Content); err != nil {
				return nil, huma.Error422UnprocessableEntity("the request is invalid", &huma.ErrorDetail{
					Location: "body.file.content", Message: "not valid base64: " + err.Error(),
				})
			}
		}
		imp, err := importer.Import(req.File.Name, data, importer.Options{Options: opts, Format: req.File.Format, AllowMixed: req.AllowMixed})
		if err != nil {
			return nil, huma.Error422UnprocessableEntity("the file cannot be analysed", &huma.ErrorDetail{Location: "body.file", Message: err.Error()})
		}
		out.Format, out.Result, out.Latency = imp.Format, imp.Analysis, imp.Latency
		out.Notes = slices.Concat(imp.Notes, out.Notes)
	case len(req.Rows) > 0:
		var closed, open []measure.Record
		for _, r := range req.Rows {
			if r.RateRPS > 0 {
				open = append(open, measure.Record(r))
			} else {
				closed = append(closed, measure.Record(r))
			}
		}
		out.Format = "rows"
		out.Result = analysis.Analyze(slices.Concat(analysis.Summarize(closed, opts), analysis.SummarizeOpen(open, opts)), opts)
	default:
		steps := make([]measure.Step, len(req.Steps))
		for i, st := range req.Steps {
			steps[i] = measure.Step{
				Concurrency: st.Concurrency, RateRPS: st.RateRPS, Requests: st.Requests, OK: st.OK,
				RateLimited: st.RateLimited, Answers: cmp.Or(st.Answers, st.Requests), Errors: st.Errors, WallS: st.WallS,
				GoodputRPS: st.GoodputRPS, GoodputCI: st.GoodputCI,
				ThroughputRPS: st.ThroughputRPS, OutputTPS: st.OutputTPS, TTFTP50Ms: st.TTFTP50Ms, TTFTP95Ms: st.TTFTP95Ms,
				E2EP50Ms: st.E2EP50Ms, E2EP95Ms: st.E2EP95Ms, TPOTP50Ms: st.TPOTP50Ms, TPOTP95Ms: st.TPOTP95Ms,
				CountsUnknown: st.Requests == 0,
			}
		}
		out.Format = "steps"
		out.Result = analysis.Analyze(steps, opts)
	}
	if out.Latency == nil {
		if lat, err := analysis.Latency(out.Result); err == nil {
			out.Latency = &lat
		}
	}
	if out.Steps == nil {
		out.Steps = []measure.Step{}
	}
	if path := app.NonFinite(out); path != "" {
		return nil, huma.Error422UnprocessableEntity("the measurements cannot be analysed", &huma.ErrorDetail{
			Location: "body", Message: fmt.Sprintf("the analysis gives a non-finite %s", path),
		})
	}
	return &analysisOutput{Body: out}, nil
}
