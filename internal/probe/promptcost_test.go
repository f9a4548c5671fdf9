package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/scenario"
)

// The prompt-cost modes run against the simulator under a fake clock
// (bubble), whose TTFT is exactly its base plus its prefill per 1,000
// uncached tokens, so that what they measure is compared with the
// simulator's settings, whatever the machine's load.

// prefillSim has a base TTFT of 200 ms, 20 ms of prefill per 1,000
// uncached tokens and, with cache, a prefix cache of a million tokens.
func prefillSim(cache bool) fakeendpoint.Config {
	cfg := fakeendpoint.Config{MaxNumSeqs: 8, TTFT: 200 * time.Millisecond, PrefillPer1K: 20 * time.Millisecond,
		ITL: 5 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth}
	if cache {
		cfg.PrefixCacheTokens = 1_000_000
	}
	return cfg
}

// promptConfig is a probe of 4-token answers against base.
func promptConfig(base string, dial dialFunc) Config {
	return Config{BaseURL: base, Model: fakeendpoint.DefaultModel, MaxTokens: optional.Of(4), IgnoreEOS: true,
		Pause: optional.Of(time.Millisecond), DialContext: dial}
}

// within fails unless got is within 10 % of want.
func within(t *testing.T, what string, got, want float64) {
	t.Helper()
	if !(math.Abs(got-want) <= 0.1*want) {
		t.Errorf("%s is %g, not within 10 %% of the simulator's %g", what, got, want)
	}
}

func TestPrefillLadderMeasuresTheSlope(t *testing.T) {
	for _, cache := range []bool{false, true} {
		bubble(t, prefillSim(cache), func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
			cfg := promptConfig(base, dial)
			cfg.Prefill = &PrefillLadder{InputTokens: []int{512, 1024, 2048, 4096, 8192}}
			res := run(t, context.Background(), cfg, nil)
			p := res.Analysis.Prefill
			if p == nil || res.StopReason != StopCompleted || res.Analysis.Mode != ModePrefill {
				t.Fatalf("stop %s, mode %q, prefill %+v; notes %v", res.StopReason, res.Analysis.Mode, p, res.Analysis.Notes)
			}
			within(t, "the prefill slope", p.MsPer1K, 20)
			within(t, "the base TTFT", p.BaseMs, 200)
			if !(p.MsPer1KCI.Lo <= 20 && 20 <= p.MsPer1KCI.Hi) || p.Requests != 50 || len(p.Points) != 5 {
				t.Errorf("fit %+v (interval %+v), want 20 in its interval, 50 requests in 5 points", p, p.MsPer1KCI)
			}
			// Every prompt starts uniquely: a cache serves none of them.
			for _, r := range res.Records {
				if r.CachedTokens != 0 || r.PrefixTokens != 0 {
					t.Fatalf("a prefill prompt had %d cached and %d prefix tokens", r.CachedTokens, r.PrefixTokens)
				}
			}
			if res.Analysis.Knee != nil || len(res.Analysis.Steps) != 1 {
				t.Errorf("a prefill ladder judged a knee (%v) over %d steps", res.Analysis.Knee, len(res.Analysis.Steps))
			}
			// The rows read back give the same line.
			dir := t.TempDir()
			if _, err := WriteFiles(dir, res); err != nil {
				t.Fatal(err)
			}
			back := readRows(t, dir)
			again, err := analysis.FitPrefill(back)
			if err != nil || *again.MsPer1KCI != *p.MsPer1KCI || again.MsPer1K != p.MsPer1K {
				t.Errorf("requests.csv refits to %+v, %v; the run said %+v", again, err, p)
			}
			if _, err := os.Stat(filepath.Join(dir, CurveFile)); err == nil {
				t.Error("a prefill ladder wrote a curve file")
			}
			lat := promptLatency(t, dir)
			if lat.PrefillMsPer1K != p.MsPer1K || lat.Cache != nil {
				t.Errorf("prefill.yaml gives %+v, want prefill_ms_per_1k_tokens %g alone", lat, p.MsPer1K)
			}
		})
	}
}

func TestCacheComparisonMeasuresTheSaving(t *testing.T) {
	bubble(t, prefillSim(true), func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		cfg := promptConfig(base, dial)
		cfg.Cache = &CacheComparison{}
		res := run(t, context.Background(), cfg, nil)
		c := res.Analysis.Cache
		if c == nil || res.StopReason != StopCompleted || c.Fresh != 20 || c.Repeated != 20 {
			t.Fatalf("stop %s, cache %+v; notes %v", res.StopReason, c, res.Analysis.Notes)
		}
		if c.SavingMsPer1K == nil {
			t.Fatalf("no saving per 1,000 cached tokens: %+v", c)
		}
		within(t, "the TTFT saving per 1,000 cached tokens", *c.SavingMsPer1K, 20)
		// The simulator caches the prefix in whole blocks of 16 tokens,
		// its role's 4 included: all but the last, partial block.
		if !(c.HitRate > 0.98 && c.HitRate <= 1) || c.CachedFresh != 0 || !(c.InputTokens > 1800 && c.InputTokens < 2300) {
			t.Errorf("hit rate %g, fresh cached %g, input %g: want nearly all of the prefix cached, none of a fresh prompt, about 2,048 tokens",
				c.HitRate, c.CachedFresh, c.InputTokens)
		}
		within(t, "the TTFT saving", c.SavingMs, 20*c.CachedRepeated/1000)
		dir := t.TempDir()
		if _, err := WriteFiles(dir, res); err != nil {
			t.Fatal(err)
		}
		again, err := analysis.MeasureCache(readRows(t, dir))
		if err != nil || *again.SavingMsPer1K != *c.SavingMsPer1K || again.HitRate != c.HitRate {
			t.Errorf("requests.csv gives %+v, %v; the run said %+v", again, err, c)
		}
		lat := promptLatency(t, dir)
		if lat.Cache == nil || lat.Cache.HitRate == nil || *lat.Cache.HitRate != c.HitRate || lat.Cache.TTFTSavingMsPer1K != *c.SavingMsPer1K {
			t.Errorf("prefill.yaml gives %+v, want the hit rate and saving measured", lat.Cache)
		}
	})
	// Without a cache nothing is cached, and the file has no cache keys.
	bubble(t, prefillSim(false), func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		cfg := promptConfig(base, dial)
		cfg.Cache = &CacheComparison{Requests: optional.Of(6)}
		res := run(t, context.Background(), cfg, nil)
		c := res.Analysis.Cache
		if c == nil || c.HitRate != 0 || c.SavingMsPer1K != nil || math.Abs(c.SavingMs) > 0.5 {
			t.Fatalf("cache %+v against an endpoint without one", c)
		}
		if !slices.ContainsFunc(res.Analysis.Notes, func(n string) bool { return strings.Contains(n, "reported no cached tokens") }) {
			t.Errorf("no note says the endpoint cached nothing: %v", res.Analysis.Notes)
		}
		dir := t.TempDir()
		if _, err := WriteFiles(dir, res); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, PromptFile)); err == nil {
			t.Error("a cache that served nothing gave a prompt file")
		}
	})
}

func TestConversationReplaysGrowingContext(t *testing.T) {
	bubble(t, prefillSim(true), func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		cfg := promptConfig(base, dial)
		cfg.InputTokens = optional.Of(512)
		cfg.Conversation = &Conversation{Calls: 4, InFlight: optional.Of(2), ToolTime: optional.Of(300 * time.Millisecond), ToolResultTokens: optional.Of(200)}
		res := run(t, context.Background(), cfg, nil)
		cs := res.Analysis.Conversation
		if cs == nil || res.StopReason != StopCompleted || cs.Tasks != 10 || len(cs.Calls) != 4 || cs.FailedTasks != 0 {
			t.Fatalf("stop %s, conversation %+v; notes %v", res.StopReason, cs, res.Analysis.Notes)
		}
		// Each call's input is the one before plus its answer and a tool
		// result: about 4 + 200 tokens more (and the messages' overhead).
		for i := 1; i < 4; i++ {
			grew := cs.Calls[i].InputTokens - cs.Calls[i-1].InputTokens
			if !(grew > 200 && grew < 230) {
				t.Errorf("call %d's input grew by %g tokens over call %d's, want about 210", i+1, grew, i)
			}
		}
		if cs.Calls[0].CachedTokens != 0 || !(cs.Calls[3].CachedTokens > 0.9*cs.Calls[2].InputTokens) {
			t.Errorf("cached tokens by call: %+v; want none at the first call, the earlier context at later ones", cs.Calls)
		}
		if cs.HitRate == nil || !(*cs.HitRate > 0.9) {
			t.Errorf("hit rate %v, want most of the earlier context cached", cs.HitRate)
		}
		// A task is its four calls and three tool waits of 300 ms; each
		// call takes 200 ms plus its prefill of the uncached part, plus
		// 3 × 5 ms of decode.
		var tasks []float64
		by := map[int][]measure.Record{}
		for _, r := range res.Records {
			if !r.Warmup {
				by[r.Task] = append(by[r.Task], r)
			}
		}
		for _, rs := range by {
			sum := 900.0
			for _, r := range rs {
				sum += 200 + 20*float64(r.UncachedInputTokens())/1000 + 15
			}
			tasks = append(tasks, sum)
		}
		slices.Sort(tasks)
		if math.Abs(cs.TaskP50Ms-tasks[len(tasks)/2]) > 5 && math.Abs(cs.TaskP50Ms-tasks[len(tasks)/2-1]) > 5 {
			t.Errorf("task p50 %g ms, want about %g by the simulator's settings", cs.TaskP50Ms, tasks[len(tasks)/2])
		}
		if !(cs.LLMShare > 0.4 && cs.LLMShare < 0.6) {
			t.Errorf("LLM share %g, want about 4 × 0.22 s of 1.8 s", cs.LLMShare)
		}
		dir := t.TempDir()
		if _, err := WriteFiles(dir, res); err != nil {
			t.Fatal(err)
		}
		again, err := analysis.MeasureConversation(readRows(t, dir))
		if err != nil || again.TaskP95Ms != cs.TaskP95Ms || *again.HitRate != *cs.HitRate {
			t.Errorf("requests.csv gives %+v, %v; the run said %+v", again, err, cs)
		}
		if lat := promptLatency(t, dir); lat.Cache == nil || lat.Cache.HitRate == nil || *lat.Cache.HitRate != *cs.HitRate {
			t.Errorf("prefill.yaml gives %+v", lat)
		}
	})
}

// TestConversationFreshContext: a conversation whose context is fresh
// sends every call the first input alone, a new one each call, so that
// no call carries an earlier answer, tool result or cacheable prefix;
// the tool time still separates the calls.
func TestConversationFreshContext(t *testing.T) {
	bubble(t, prefillSim(true), func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		cfg := promptConfig(base, dial)
		cfg.InputTokens = optional.Of(512)
		cfg.Conversation = &Conversation{Calls: 3, InFlight: optional.Of(2), ToolTime: optional.Of(300 * time.Millisecond), ToolResultTokens: optional.Of(200), Fresh: true}
		res := run(t, context.Background(), cfg, nil)
		cs := res.Analysis.Conversation
		if cs == nil || res.StopReason != StopCompleted || cs.Tasks != 10 || len(cs.Calls) != 3 || cs.HitRate != nil {
			t.Fatalf("stop %s, conversation %+v; notes %v", res.StopReason, cs, res.Analysis.Notes)
		}
		for _, c := range cs.Calls {
			if math.Abs(c.InputTokens-cs.Calls[0].InputTokens) > 2 || c.CachedTokens != 0 {
				t.Errorf("call %d: %g input tokens (%g cached), want the first call's %g and none cached", c.Call, c.InputTokens, c.CachedTokens, cs.Calls[0].InputTokens)
			}
		}
		for _, r := range res.Records {
			if r.PrefixTokens != 0 {
				t.Fatalf("task %d call %d has a prefix of %d tokens", r.Task, r.Call, r.PrefixTokens)
			}
		}
		// Three calls of 200 ms, 20 ms per 1,000 input tokens of prefill
		// and 3 × 5 ms of decode, with two tool waits of 300 ms.
		want := 600 + 3*(200+20*cs.Calls[0].InputTokens/1000+15)
		if math.Abs(cs.TaskP50Ms-want) > 5 {
			t.Errorf("task p50 %g ms, want about %g", cs.TaskP50Ms, want)
		}
	})
}

// readRows reads a run's requests.csv from dir.
func readRows(t *testing.T, dir string) []measure.Record {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := measure.ReadCSV(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// promptLatency reads the latency block of a run's prefill.yaml, given
// beside a TTFT and a TPOT so that it is a scenario's whole profile.
func promptLatency(t *testing.T, dir string) scenario.Latency {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, PromptFile))
	if err != nil {
		t.Fatal(err)
	}
	doc := "quotas: [{name: q, rpm: 60}]\nclasses: [{name: c, quota: q, mode: batch, input_tokens: {fixed: 10}, output_tokens: {fixed: 10}}]\n" +
		string(b) + "  ttft_ms: {fixed: 200}\n  tpot_ms: {fixed: 5}\n"
	sc, err := scenario.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("%v in\n%s", err, doc)
	}
	return sc.Latency
}

// TestSLOGoodputRecountsFromTheRows: a ladder against a simulator whose
// TTFT grows with the batch and whose answers vary in length, under
// ttft:230ms,tpot:12ms,e2e:300ms, so that some of each step's requests
// meet every target and some do not. Read back from requests.csv, the
// rows that meet all three give each step's met count and attainment,
// and, weighted by the share of each inside the step's window, its
// goodput: the probe's figures.
func TestSLOGoodputRecountsFromTheRows(t *testing.T) {
	sim := fakeendpoint.Config{MaxNumSeqs: 8, TTFT: 200 * time.Millisecond, TTFTGrowth: 0.05, ITL: 10 * time.Millisecond, OutputTokens: 8, Seed: 3}
	bubble(t, sim, func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		slo := measure.Targets{TTFTMs: 230, TPOTMs: 12, E2EMs: 300}
		cfg := Config{BaseURL: base, Model: fakeendpoint.DefaultModel, MaxTokens: optional.Of(16), InputTokens: optional.Of(32),
			Steps: []int{1, 2, 4, 8}, Pause: optional.Of(time.Millisecond), DialContext: dial, SLO: slo}
		res := run(t, context.Background(), cfg, nil)
		dir := t.TempDir()
		if _, err := WriteFiles(dir, res); err != nil {
			t.Fatal(err)
		}
		rows := readRows(t, dir)
		var summary measure.Result
		b, _ := os.ReadFile(filepath.Join(dir, StepsFile))
		if err := json.Unmarshal(b, &summary); err != nil {
			t.Fatal(err)
		}
		if summary.SLO == nil || *summary.SLO != slo {
			t.Fatalf("steps.json carries the SLO %+v, want %+v", summary.SLO, slo)
		}
		mixed := 0
		for _, s := range summary.Steps {
			var met, n int
			var good float64
			for _, r := range rows {
				if r.Step != s.Concurrency || r.Warmup || r.ErrorClass == measure.ErrCancelled {
					continue
				}
				n++
				// Met by hand: success, TTFT, TPOT and E2E within their
				// targets (and within the 12 s deadline).
				tpot := 0.0
				if r.OutputTokens > 1 {
					tpot = (r.E2EMs - r.TTFTMs) / float64(r.OutputTokens-1)
				}
				if !(r.OK && r.TTFTMs <= 230 && tpot <= 12 && r.E2EMs <= 300 && r.E2EMs <= 12_000) {
					continue
				}
				met++
				end := r.StartS + math.Max(r.E2EMs, r.E2EWithRetriesMs)/1000
				if overlap := math.Min(end, s.WindowEndS) - math.Max(r.StartS, s.WindowStartS); overlap > 0 {
					good += overlap / (end - r.StartS)
				}
			}
			if s.SLO == nil || s.SLO.Met != met || s.Requests != n || math.Abs(s.SLO.Attainment-float64(met)/float64(n)) > 1e-4 {
				t.Errorf("step %d: SLO %+v of %d requests; the rows count %d of %d", s.Concurrency, s.SLO, s.Requests, met, n)
			}
			if want := good / (s.WindowEndS - s.WindowStartS); math.Abs(s.GoodputRPS-want) > 1e-6*want+1e-9 {
				t.Errorf("step %d: goodput %g req/s, the rows give %g", s.Concurrency, s.GoodputRPS, want)
			}
			if met > 0 && met < n {
				mixed++
			}
		}
		if mixed < 2 {
			t.Errorf("only %d steps had requests both meeting and missing the SLO: the test does not test the count", mixed)
		}
	})
}

func TestValidatePromptModes(t *testing.T) {
	ok := Config{BaseURL: "https://api.example.test/v1", Model: "m"}
	prefill := &PrefillLadder{InputTokens: []int{256, 1024}}
	tests := []struct {
		name       string
		edit       func(*Config)
		path, want string
	}{
		{"one length", func(c *Config) { c.Prefill = &PrefillLadder{InputTokens: []int{256}} }, "prefill.input_tokens", "1 lengths, want 2 to 64"},
		{"lengths not ascending", func(c *Config) { c.Prefill = &PrefillLadder{InputTokens: []int{256, 128}} }, "prefill.input_tokens[1]", "strictly ascending"},
		{"a length too long", func(c *Config) { c.Prefill = &PrefillLadder{InputTokens: []int{256, MaxInputTokens + 1}} }, "prefill.input_tokens[1]", "outside 1..1000000"},
		{"too few per length", func(c *Config) { c.Prefill = &PrefillLadder{InputTokens: []int{256, 1024}, Requests: optional.Of(2)} }, "prefill.requests", "leave 1 measured, fewer than the 2"},
		{"a warm-up that leaves too few", func(c *Config) { c.Prefill, c.Warmup = prefill, optional.Of(10) }, "warmup", "leave 1 measured"},
		{"prefill with input tokens", func(c *Config) { c.Prefill, c.InputTokens = prefill, optional.Of(512) }, "input_tokens", "prefill.input_tokens"},
		{"prefill with steps", func(c *Config) { c.Prefill, c.Steps = prefill, []int{1, 2} }, "steps", "give steps or prefill"},
		{"prefill with a search", func(c *Config) { c.Prefill, c.Search = prefill, true }, "search", "knee search"},
		{"prefill with a step size", func(c *Config) { c.Prefill, c.RequestsPerStep = prefill, optional.Of(100) }, "requests_per_step", "prefill.requests"},
		{"prefill with prompts", func(c *Config) { c.Prefill, c.Prompts = prefill, []Prompt{{Text: "a"}} }, "prompts", "builds its own prompts"},
		{"prefill and cache", func(c *Config) { c.Prefill, c.Cache = prefill, &CacheComparison{} }, "cache", "give prefill or cache, not both"},
		{"cache and an open loop", func(c *Config) {
			c.Cache, c.Open = &CacheComparison{}, &OpenLoop{MaxInFlight: 2, Rates: []float64{1}}
		}, "cache", "give open_loop or cache"},
		{"cache prompt too short", func(c *Config) { c.Cache, c.InputTokens = &CacheComparison{}, optional.Of(100) }, "input_tokens", "at least 128"},
		{"cache too small", func(c *Config) { c.Cache = &CacheComparison{Requests: optional.Of(5)} }, "cache.requests", "leave 4 measured, fewer than the 5"},
		{"one call", func(c *Config) { c.Conversation = &Conversation{Calls: 1} }, "conversation.calls", "outside 2..100"},
		{"no tasks in flight", func(c *Config) { c.Conversation = &Conversation{Calls: 3, InFlight: optional.Of(0)} }, "conversation.tasks_in_flight", "outside 1..10000"},
		{"only warm-up tasks", func(c *Config) {
			c.Conversation, c.Warmup = &Conversation{Calls: 3, Tasks: optional.Of(2)}, optional.Of(2)
		}, "conversation.tasks", "leave 0 measured"},
		{"negative tool time", func(c *Config) { c.Conversation = &Conversation{Calls: 3, ToolTime: optional.Of(-time.Second)} }, "conversation.tool_time", "outside 0..10m0s"},
		{"no tool result", func(c *Config) { c.Conversation = &Conversation{Calls: 3, ToolResultTokens: optional.Of(0)} }, "conversation.tool_result_tokens", "outside 1..1000000"},
		{"a context too long", func(c *Config) {
			c.Conversation, c.MaxTokens = &Conversation{Calls: 100, ToolResultTokens: optional.Of(20_000)}, optional.Of(1000)
		}, "conversation.calls", "would grow to 2079256 tokens"},
		{"an SLO target out of range", func(c *Config) { c.SLO = measure.Targets{TTFTMs: -5} }, "slo.ttft_ms", "outside (0, 3600000]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			errs := c.Validate()
			if len(errs) != 1 || errs[0].Path != tc.path || !strings.Contains(errs[0].Message, tc.want) {
				t.Errorf("problems %v, want one at %s saying %q", errs, tc.path, tc.want)
			}
			if again := c.WithDefaults().Validate(); !slices.Equal(again, errs) {
				t.Errorf("with its defaults applied, the configuration has other problems: %v, not %v", again, errs)
			}
		})
	}
	for _, c := range []Config{
		{BaseURL: ok.BaseURL, Model: "m", Prefill: prefill},
		{BaseURL: ok.BaseURL, Model: "m", Cache: &CacheComparison{}},
		{BaseURL: ok.BaseURL, Model: "m", Conversation: &Conversation{Calls: 4}, SLO: measure.Targets{TTFTMs: 500}},
	} {
		if errs := c.Validate(); len(errs) > 0 {
			t.Errorf("%+v: %v", c, errs)
		}
		if errs := c.WithDefaults().Validate(); len(errs) > 0 {
			t.Errorf("%+v with its defaults: %v", c, errs)
		}
		capped, errs := c.WithinCaps(Caps{MaxConcurrency: 4, MaxRequests: 1000, MaxTokens: 1_000_000, MaxDuration: time.Minute})
		if len(errs) > 0 || len(capped.Validate()) > 0 || capped.Steps != nil {
			t.Errorf("%+v within caps: %v, %v (steps %v)", c, errs, capped.Validate(), capped.Steps)
		}
	}
}
