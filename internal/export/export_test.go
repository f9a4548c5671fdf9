package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
	"github.com/plannerdev/planner/internal/testutil"
)

// planOf plans a scenario.
func planOf(t *testing.T, sc scenario.Scenario) *plan.Plan {
	t.Helper()
	p, err := plan.New(plan.Options{}).Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// parse reads a scenario's text.
func parse(t *testing.T, text string) scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// noPoolFits is docs/examples/chat.yaml with a TTFT SLO below the TTFT
// itself, on a key with a daily request limit and no rpm: no pool fits.
func noPoolFits(t *testing.T) scenario.Scenario {
	t.Helper()
	text, _ := planner.Example("chat")
	return parse(t, strings.NewReplacer("slo: {ttft_p95_ms: 1500, e2e_p95_ms: 12000}", "slo: {ttft_p95_ms: 100}", "rpm: 3000", "rpd: 100000").Replace(string(text)))
}

func render(t *testing.T, to string, sc scenario.Scenario, p *plan.Plan, o Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, to, sc, p, o); err != nil {
		t.Fatalf("export %s: %v", to, err)
	}
	return b.Bytes()
}

// TestPromtoolAcceptsTheRules runs promtool check rules on the rules of
// every shipped example, with the default metric names and with a
// mapping file of other names and class selectors. Without promtool it
// skips, unless PLANNER_REQUIRE_PROMTOOL=1 (as .ci/run sets it, where
// Debian's prometheus package provides promtool).
func TestPromtoolAcceptsTheRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("PLANNER_REQUIRE_PROMTOOL") == "1" {
			t.Fatalf("PLANNER_REQUIRE_PROMTOOL=1 but promtool is not installed: %v", err)
		}
		t.Skipf("promtool is not installed (Debian's prometheus package has it): %v", err)
	}
	mapped, err := ParseMetrics([]byte(`
ttft_histogram: llm_ttft_seconds
e2e_histogram: llm_request_seconds
requests_counter: llm_requests_total
rate_limited_matchers: 'status="429"'
token_histogram: llm_tokens
token_type_label: kind
class_label: task
classes: {chat: 'service="chat-api", env!~"dev|test"'}
window: 2m
for: 15m
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range planner.ExampleNames() {
		sc := testutil.Example(t, name)
		p := planOf(t, sc)
		for i, m := range []Metrics{{}, mapped} {
			if _, ok := m.Classes["chat"]; ok && !hasClass(mustClasses(t, sc, p), "chat") {
				continue
			}
			file := filepath.Join(dir, name+strconv.Itoa(i)+".yaml")
			if err := os.WriteFile(file, render(t, ToPrometheusRules, sc, p, Options{Metrics: m}), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "SUCCESS") {
				t.Errorf("%s (metrics %d): promtool check rules: %v\n%s", name, i, err, out)
			}
		}
	}
}

func mustClasses(t *testing.T, sc scenario.Scenario, p *plan.Plan) []classPair {
	t.Helper()
	cs, err := classesOf(sc, p)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// rulesOf parses a rules file.
func rulesOf(t *testing.T, b []byte) []rule {
	t.Helper()
	var f ruleFile
	if err := yaml.Unmarshal(b, &f); err != nil || len(f.Groups) != 1 || f.Groups[0].Name != RulesGroup {
		t.Fatalf("not a rules file of one group (%v):\n%s", err, b)
	}
	return f.Groups[0].Rules
}

// threshold is the number an alert's expression compares with.
var threshold = regexp.MustCompile(` > ([0-9.]+)$`)

func thresholdOf(t *testing.T, r rule) float64 {
	t.Helper()
	m := threshold.FindStringSubmatch(r.Expr)
	if m == nil {
		t.Fatalf("%s: no threshold in %q", r.Alert, r.Expr)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestRulesCarryThePlansNumbers: every class with an SLO has its latency
// alerts at the SLO, every class a 429 alert at the share a plan holds
// with, and every limit of every key a use alert at the plan's usable
// share, each reading the class's own series.
func TestRulesCarryThePlansNumbers(t *testing.T) {
	for _, name := range planner.ExampleNames() {
		sc := testutil.Example(t, name)
		p := planOf(t, sc)
		rules := rulesOf(t, render(t, ToPrometheusRules, sc, p, Options{}))
		find := func(alert string, labels map[string]string) *rule {
			for i, r := range rules {
				match := r.Alert == alert
				for k, v := range labels {
					match = match && r.Labels[k] == v
				}
				if match {
					return &rules[i]
				}
			}
			return nil
		}
		want := 0
		for _, c := range sc.Classes {
			cp := p.Classes[0]
			for _, x := range p.Classes {
				if x.Name == c.Name {
					cp = x
				}
			}
			sel := `{class="` + c.Name + `"`
			for _, lat := range []struct {
				alert string
				slo   float64
			}{{AlertTTFT, sloOf(c).TTFT()}, {AlertE2E, sloOf(c).E2E()}, {AlertTPOT, sloOf(c).TPOT()}, {AlertTaskE2E, sloOf(c).TaskE2E()}} {
				r := find(lat.alert, map[string]string{"class": c.Name})
				if lat.slo == 0 {
					if r != nil {
						t.Errorf("%s/%s: %s without an SLO", name, c.Name, lat.alert)
					}
					continue
				}
				want++
				if r == nil || thresholdOf(t, *r) != lat.slo/1000 || !strings.Contains(r.Expr, sel) || !strings.Contains(r.Expr, "_bucket") {
					t.Errorf("%s/%s: %s is %+v, want the SLO %g s", name, c.Name, lat.alert, r, lat.slo/1000)
				}
			}
			want++
			r := find(Alert429, map[string]string{"class": c.Name})
			if r == nil || thresholdOf(t, *r) != simulate.MaxLimitedShare || strings.Count(r.Expr, sel) != 2 ||
				!strings.Contains(r.Annotations["description"], "pool "+strconv.Itoa(cp.Pool)) {
				t.Errorf("%s/%s: the 429 alert is %+v", name, c.Name, r)
			}
		}
		for _, q := range p.Quotas {
			for d, usable := range q.Usable {
				want++
				r := find(AlertQuota, map[string]string{"quota": q.Name, "limit": d})
				if r == nil || thresholdOf(t, *r) != usable {
					t.Errorf("%s: key %s %s: %+v, want the usable %g", name, q.Name, d, r, usable)
					continue
				}
				dim, _ := scenario.DimensionNamed(d)
				if dim.Daily() != strings.Contains(r.Expr, "increase(") || dim.Daily() == strings.HasSuffix(r.Expr, "* 60 > "+promNumber(usable)) {
					t.Errorf("%s: key %s %s: %q is not over the limit's period", name, q.Name, d, r.Expr)
				}
				for _, a := range q.Allocations {
					if !strings.Contains(r.Expr, `{class="`+a.Class+`"`) {
						t.Errorf("%s: key %s %s does not count class %s: %q", name, q.Name, d, a.Class, r.Expr)
					}
				}
			}
		}
		if len(rules) != want {
			t.Errorf("%s: %d rules, want %d", name, len(rules), want)
		}
	}
}

// TestQuotaUseCountsAsTheKeyDoes: a key that counts max_tokens at
// admission is charged max_tokens per request sent for output, one that
// counts the tokens produced the output tokens measured.
func TestQuotaUseCountsAsTheKeyDoes(t *testing.T) {
	sc := testutil.Example(t, "chat") // token_accounting: max_tokens, max_tokens 700
	p := planOf(t, sc)
	exprOf := func(sc scenario.Scenario, p *plan.Plan, limit string) string {
		for _, r := range rulesOf(t, render(t, ToPrometheusRules, sc, p, Options{})) {
			if r.Alert == AlertQuota && r.Labels["limit"] == limit {
				return r.Expr
			}
		}
		t.Fatalf("no %s alert", limit)
		return ""
	}
	reserved := exprOf(sc, p, "tpm")
	if !strings.Contains(reserved, `gen_ai_client_token_usage_sum{class="chat", gen_ai_token_type="input"}`) ||
		!strings.Contains(reserved, `(sum(rate(gen_ai_client_operation_duration_seconds_count{class="chat"}[5m])) or vector(0)) * 700`) {
		t.Errorf("max_tokens accounting: %s", reserved)
	}
	sc.Quotas[0].TokenAccounting = scenario.AccountingActual
	p = planOf(t, sc)
	actual := exprOf(sc, p, "tpm")
	if strings.Contains(actual, "* 700") || !strings.Contains(actual, `gen_ai_client_token_usage_sum{class="chat"}[5m]`) {
		t.Errorf("actual accounting: %s", actual)
	}
	if rpm := exprOf(sc, p, "rpm"); rpm != `((sum(rate(gen_ai_client_operation_duration_seconds_count{class="chat"}[5m])) or vector(0))) * 60 > 2700` {
		t.Errorf("rpm: %s", rpm)
	}
}

// TestLiteLLMLoadsWithThePlansNumbers reads the LiteLLM settings as plain
// YAML, as the proxy does: one deployment per class with a pool, whose
// rpm and tpm are its allotments rounded down and whose
// max_parallel_requests is its pool; a key without rpm paces by the
// plan's rate; a class with pool 0 is left out.
func TestLiteLLMLoadsWithThePlansNumbers(t *testing.T) {
	for _, name := range planner.ExampleNames() {
		sc := testutil.Example(t, name)
		p := planOf(t, sc)
		var cfg struct {
			ModelList []struct {
				ModelName     string         `yaml:"model_name"`
				LiteLLMParams map[string]any `yaml:"litellm_params"`
				ModelInfo     map[string]any `yaml:"model_info"`
			} `yaml:"model_list"`
			RouterSettings map[string]any `yaml:"router_settings"`
		}
		out := render(t, ToLiteLLM, sc, p, Options{Model: "openai/gpt-4o-mini"})
		if err := yaml.Unmarshal(out, &cfg); err != nil || cfg.RouterSettings["routing_strategy"] != "simple-shuffle" {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		i := 0
		for _, cp := range p.Classes {
			if cp.Pool == 0 {
				if !strings.Contains(string(out), "as no pool fits them (see their remedies): "+cp.Name) {
					t.Errorf("%s: %s (pool 0) is not said to be left out", name, cp.Name)
				}
				continue
			}
			if i >= len(cfg.ModelList) {
				t.Fatalf("%s: %d deployments", name, len(cfg.ModelList))
			}
			d := cfg.ModelList[i]
			i++
			var allot map[string]float64
			var limits map[string]float64
			for _, q := range p.Quotas {
				if q.Name == cp.Quota {
					allot, limits = allotment(q, cp.Name), q.Limits
				}
			}
			wantRPM := int(math.Floor(allot["rpm"]))
			if limits["rpm"] == 0 {
				wantRPM = int(math.Floor(cp.Pacing.RateRPS * 60))
			}
			lp := d.LiteLLMParams
			if d.ModelName != cp.Name || d.ModelInfo["id"] != cp.Name || lp["model"] != "openai/gpt-4o-mini" ||
				lp["api_key"] != "os.environ/"+KeyEnv(cp.Quota) || lp["max_parallel_requests"] != cp.Pool || lp["rpm"] != max(wantRPM, 1) {
				t.Errorf("%s: deployment %+v, want class %s with pool %d and rpm %d", name, d, cp.Name, cp.Pool, wantRPM)
			}
			if tpm, ok := lp["tpm"]; ok != (limits["tpm"] > 0) || ok && tpm != int(math.Floor(allot["tpm"])) {
				t.Errorf("%s: %s tpm %v, allotment %g", name, cp.Name, tpm, allot["tpm"])
			}
		}
		if i != len(cfg.ModelList) {
			t.Errorf("%s: %d deployments for %d classes with a pool", name, len(cfg.ModelList), i)
		}
	}
	sc := noPoolFits(t)
	out := render(t, ToLiteLLM, sc, planOf(t, sc), Options{})
	var cfg map[string]any
	if err := yaml.Unmarshal(out, &cfg); err != nil || len(cfg["model_list"].([]any)) != 0 || !strings.Contains(string(out), "Left out, as no pool fits them (see their remedies): chat.") {
		t.Errorf("a class with pool 0: %v\n%s", err, out)
	}
	if got := KeyEnv("prod-eu.2"); got != "PROD_EU_2_API_KEY" {
		t.Errorf("KeyEnv = %q", got)
	}
}

// TestClientSettings round-trips the client settings file: every class's
// settings are the plan's, and a class with pool 0 sends nothing.
func TestClientSettings(t *testing.T) {
	for _, sc := range []scenario.Scenario{testutil.Example(t, "three-classes"), noPoolFits(t)} {
		p := planOf(t, sc)
		var got clientSettings
		dec := json.NewDecoder(bytes.NewReader(render(t, ToClient, sc, p, Options{})))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil || got.Version != ClientSettingsVersion || len(got.Classes) != len(p.Classes) {
			t.Fatalf("%v: %+v", err, got)
		}
		for i, cp := range p.Classes {
			c := got.Classes[i]
			if c.Name != cp.Name || c.MaxInFlight != cp.Pool || c.Pacing != cp.Pacing || c.AIMD != cp.Adaptive || c.Feasible != fits(cp) ||
				c.Retry.MaxAttempts != cp.Retry.MaxAttempts || c.Retry.DeadlineMs != cp.Retry.DeadlineMs || c.MaxTokens != sc.Classes[i].MaxTokens {
				t.Errorf("class %s: %+v, plan %+v", cp.Name, c, cp)
			}
		}
	}
}

// TestClientSettingsFeasibleIsWhetherItFits: a class the queueing model
// finds feasible but whose own simulation breaks does not fit, and its
// client settings say feasible false, as docs/exports.md defines the
// field; a plan stored without a check keeps the model's answer.
func TestClientSettingsFeasibleIsWhetherItFits(t *testing.T) {
	sc := testutil.Example(t, "three-classes")
	p := planOf(t, sc)
	no := false
	p.Classes[0].Fits = &no
	p.Classes[1].Fits = nil
	var got clientSettings
	if err := json.Unmarshal(render(t, ToClient, sc, p, Options{}), &got); err != nil {
		t.Fatal(err)
	}
	if !p.Classes[0].Feasible || got.Classes[0].Feasible {
		t.Errorf("class %s feasible by the model %v, exported feasible %v: want false, as it does not fit", p.Classes[0].Name, p.Classes[0].Feasible, got.Classes[0].Feasible)
	}
	if got.Classes[1].Feasible != p.Classes[1].Feasible {
		t.Errorf("an unchecked class exports feasible %v, want the model's %v", got.Classes[1].Feasible, p.Classes[1].Feasible)
	}
}

// TestFormats: each target converts to the other format with the same
// content, and ContentType names its own.
func TestFormats(t *testing.T) {
	sc := testutil.Example(t, "chat")
	p := planOf(t, sc)
	for _, to := range Targets {
		own := render(t, to, sc, p, Options{})
		var a, b any
		if err := yaml.Unmarshal(own, &a); err != nil {
			t.Fatal(err)
		}
		other := FormatJSON
		if to == ToClient {
			other = FormatYAML
		}
		converted := render(t, to, sc, p, Options{Format: other})
		if err := yaml.Unmarshal(converted, &b); err != nil {
			t.Fatal(err)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) || (other == FormatJSON) != json.Valid(converted) {
			t.Errorf("%s as %s differs from its own format", to, other)
		}
		if want := map[string]string{ToClient: "application/json"}[to]; want != "" && ContentType(to) != want || want == "" && ContentType(to) != "application/yaml" {
			t.Errorf("%s: content type %s", to, ContentType(to))
		}
	}
	if err := Write(&bytes.Buffer{}, "grafana", sc, p, Options{}); err == nil || !strings.Contains(err.Error(), "prometheus-rules, litellm, client") {
		t.Errorf("an unknown target: %v", err)
	}
	if err := Write(&bytes.Buffer{}, ToClient, sc, p, Options{Format: "toml"}); err == nil {
		t.Error("an unknown format was accepted")
	}
}

// TestParseMetrics: the keys left out keep their defaults, unknown keys
// and names that Prometheus would refuse are refused by their key, and a
// selector for a class the plan does not have is refused when the rules
// are written.
func TestParseMetrics(t *testing.T) {
	m, err := ParseMetrics([]byte("class_label: task\nclasses: {chat: 'job=\"chat\"'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultMetrics()
	want.ClassLabel, want.Classes = "task", map[string]string{"chat": `job="chat"`}
	if m.ClassLabel != want.ClassLabel || m.TTFT != want.TTFT || m.Window != want.Window || m.Classes["chat"] != `job="chat"` {
		t.Errorf("got %+v", m)
	}
	if m, err := ParseMetrics(nil); err != nil || m.TTFT != DefaultMetrics().TTFT {
		t.Errorf("an empty file: %+v %v", m, err)
	}
	for _, tc := range []struct{ file, want string }{
		{"ttft: x\n", "the metrics file: ttft: unknown key (the keys are ttft_histogram, e2e_histogram, "},
		{"window: 5\n", "the metrics file: window: must be a Prometheus duration such as 5m, got a number"},
		{"for: true\n", "the metrics file: for: must be a Prometheus duration such as 5m, got true or false"},
		{"ttft_histogram: [a]\n", "the metrics file: ttft_histogram: must be a string, got a list"},
		{"classes: {chat: 5}\n", "the metrics file: classes: must be a mapping of class names to label matchers (strings), got a number"},
		{"classes: [a]\n", "the metrics file: classes: must be a mapping of class names to label matchers (strings), got a list"},
		{"ttft_histogram: 9lives\n", "ttft_histogram: must be a histogram's own name, a Prometheus metric name"},
		// A histogram is named without the suffixes the rules add to it,
		// and le is its buckets' label, not a class's.
		{"ttft_histogram: x_bucket\n", "ttft_histogram: must be a histogram's own name, a Prometheus metric name without _bucket, _sum or _count"},
		{"e2e_histogram: x_sum\n", "e2e_histogram: must be a histogram's own name"},
		{"token_histogram: t_count\n", "token_histogram: must be a histogram's own name"},
		{"class_label: le\n", "class_label: must be a Prometheus label name other than le"},
		{"class_label: a-b\nwindow: 5 minutes\n", "2 problems"},
		{"window: 5 minutes\n", "window: must be a Prometheus duration"},
		{"window: 0s\n", "window: must be a Prometheus duration greater than 0"},
		{"for: 0m0s\n", "for: must be a Prometheus duration greater than 0"},
		// Durations that promtool refuses: units out of order or twice, or
		// beyond the range of a duration.
		{"window: 5m1h\n", "window: must be a Prometheus duration"},
		{"window: 1h1h\n", "window: must be a Prometheus duration"},
		{"for: 30s5m\n", "for: must be a Prometheus duration"},
		{"for: 300y\n", "for: must be a Prometheus duration"},
		{"window: 99999999999999999999y\n", "window: must be a Prometheus duration"},
		{"class_label: __name__\n", "class_label: must be a Prometheus label name"},
		{"token_type_label: __x\n", "token_type_label: must be a Prometheus label name"},
		{"rate_limited_matchers: 'status=429'\n", "rate_limited_matchers: must be label matchers"},
		{"classes: {chat: 'job=\"a\"}, x=\"b'}\n", "classes[chat]: must be label matchers"},
		{"- a\n", "the metrics file: must be a mapping of the keys of docs/exports.md, got a list"},
		{"just words\n", "the metrics file: must be a mapping of the keys of docs/exports.md, got a string"},
		// Selectors that match the shape but that Prometheus does not parse:
		// an escape PromQL has not, a regular expression that does not compile.
		{"classes: {chat: 'job=\"\\q\"'}\n", "classes[chat]: must be label matchers"},
		{"classes: {chat: 'job=~\"(\"'}\n", "classes[chat]: must be label matchers"},
		{"rate_limited_matchers: 'code=\"429\",error_type!~\"[a\"'\n", "rate_limited_matchers: must be label matchers"},
	} {
		if _, err := ParseMetrics([]byte(tc.file)); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "json:") || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%q: %v, want %q", tc.file, err, tc.want)
		}
	}
	if _, err := ParseMetrics([]byte(`classes: {chat: 'job=~"a|b\\d+", env!="x\"y"'}` + "\n")); err != nil {
		t.Errorf("matchers Prometheus parses: %v", err)
	}
	for _, d := range []string{"1h30m", "1d", "2w", "1y2w3d4h5m6s7ms", "90s", "250ms"} {
		if _, err := ParseMetrics([]byte("window: " + d + "\nfor: " + d + "\n")); err != nil {
			t.Errorf("duration %s, which Prometheus parses: %v", d, err)
		}
	}
	sc := testutil.Example(t, "chat")
	err = Write(&bytes.Buffer{}, ToPrometheusRules, sc, planOf(t, sc), Options{Metrics: Metrics{Classes: map[string]string{"nightly": `job="n"`}}})
	if err == nil || !strings.Contains(err.Error(), `classes.nightly: no class named "nightly"`) {
		t.Errorf("a selector for no class: %v", err)
	}
}

// everyForm is a scenario with every SLO form at the 99th percentile: a
// class of single calls with TTFT, E2E and TPOT targets, and an agent task
// class with TTFT, TPOT and task E2E targets.
const everyForm = `
quotas: [{name: k, rpm: 6000, tpm: 4000000}]
latency: {ttft_ms: {p50: 400, p95: 900}, tpot_ms: {p50: 15, p95: 25}, prefill_ms_per_1k_tokens: 20, knee: 64}
classes:
  - name: chat
    quota: k
    mode: interactive
    demand: {rps: 2}
    input_tokens: {p50: 800, p95: 2000}
    output_tokens: {p50: 150, p95: 400}
    max_tokens: 600
    slo: {ttft_ms: 2500, e2e_ms: 20000, tpot_ms: 60, percentile: 99}
  - name: coder
    quota: k
    mode: interactive
    demand: {rps: 0.2}
    input_tokens: {p50: 2000, p95: 4000}
    output_tokens: {p50: 200, p95: 500}
    task: {calls: {fixed: 4}, tool_ms: {fixed: 1000}, tool_result_tokens: {fixed: 300}}
    slo: {ttft_ms: 3000, tpot_ms: 60, task_e2e_ms: 90000, percentile: 99}
`

// TestRulesOfEveryFormAtP99: each target of a p99 SLO has its alert, a
// 0.99 quantile of its own histogram (the task duration's for task_e2e_ms)
// above the target with the plan's prediction at the percentile. promtool
// checks the file and runs it over series whose p95 is under every target
// and whose p99 is above it: every latency alert fires, so each reads
// the 0.99 quantile, and nothing else does.
func TestRulesOfEveryFormAtP99(t *testing.T) {
	sc := parse(t, everyForm)
	p := planOf(t, sc)
	out := render(t, ToPrometheusRules, sc, p, Options{})
	rules := rulesOf(t, out)
	m := DefaultMetrics()
	type want struct {
		alert, class, metric string
		target               float64
		predicted            *float64
	}
	chat, coder := p.Classes[0].Predicted, p.Classes[1].Predicted
	wants := []want{
		{AlertTTFT, "chat", m.TTFT, 2500, chat.TTFTMsAtPercentile},
		{AlertE2E, "chat", m.E2E, 20000, chat.E2EMsAtPercentile},
		{AlertTPOT, "chat", m.TPOT, 60, chat.TPOTMsAtPercentile},
		{AlertTTFT, "coder", m.TTFT, 3000, coder.TTFTMsAtPercentile},
		{AlertTPOT, "coder", m.TPOT, 60, coder.TPOTMsAtPercentile},
		{AlertTaskE2E, "coder", "gen_ai_client_task_duration_seconds", 90000, coder.E2EMsAtPercentile},
	}
	var latency []rule
	for _, r := range rules {
		if strings.HasPrefix(r.Expr, "histogram_quantile(") {
			latency = append(latency, r)
		}
	}
	if len(latency) != len(wants) {
		t.Fatalf("%d latency rules, want %d:\n%s", len(latency), len(wants), out)
	}
	for i, w := range wants {
		r := latency[i]
		if w.predicted == nil {
			t.Fatalf("%s/%s: the plan predicts nothing at p99", w.class, w.alert)
		}
		expr := `histogram_quantile(0.99, sum by (le) (rate(` + w.metric + `_bucket{class="` + w.class + `"}[5m]))) > ` + promNumber(w.target/1000)
		if r.Alert != w.alert || r.Labels["class"] != w.class || r.Labels["percentile"] != "99" || r.Expr != expr ||
			!strings.Contains(r.Annotations["summary"], "p99 above its SLO of "+number(w.target)+" ms") ||
			!strings.Contains(r.Annotations["description"], "predicts "+number(*w.predicted)+" ms") {
			t.Errorf("rule %d: %+v, want %s of %s with %s", i, r, w.alert, w.class, expr)
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("PLANNER_REQUIRE_PROMTOOL") == "1" {
			t.Fatalf("PLANNER_REQUIRE_PROMTOOL=1 but promtool is not installed: %v", err)
		}
		t.Skipf("promtool is not installed (Debian's prometheus package has it): %v", err)
	}
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rulesFile, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", rulesFile).CombinedOutput(); err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	// Per minute, 97 observations at most half the target and 3 above it:
	// the p95 lies under the target, the p99 at twice it (and half a
	// second, where the value is said in whole seconds).
	var series, alerts strings.Builder
	p99 := make([]float64, len(wants))
	for i, w := range wants {
		lo := w.target / 2000
		p99[i] = 2 * w.target / 1000
		if p99[i] >= 60 {
			p99[i] += 0.5
		}
		s := func(le string, perMinute int) {
			fmt.Fprintf(&series, "      - series: '%s_bucket{class=%q, le=%q}'\n        values: '0+%dx40'\n", w.metric, w.class, le, perMinute)
		}
		s(promNumber(lo), 97)
		s(promNumber(lo+1.5*(p99[i]-lo)), 100) // linear within the bucket: lo + (2/3)·(hi − lo) = p99
		s("+Inf", 100)
	}
	for _, alert := range []string{AlertTTFT, AlertE2E, AlertTPOT, AlertTaskE2E, Alert429, AlertQuota} {
		fmt.Fprintf(&alerts, "      - eval_time: 30m\n        alertname: %s\n        exp_alerts:\n", alert)
		n := 0
		for i, w := range wants {
			if w.alert != alert {
				continue
			}
			n++
			r := latency[i]
			desc := strings.Replace(r.Annotations["description"], "{{ $value | humanizeDuration }}", humanizeDuration(p99[i]), 1)
			fmt.Fprintf(&alerts, "          - exp_labels: {severity: warning, class: %s, percentile: \"99\"}\n            exp_annotations: {summary: %q, description: %q}\n",
				w.class, r.Annotations["summary"], desc)
		}
		if n == 0 {
			alerts.WriteString("          []\n")
		}
	}
	test := "rule_files: [rules.yaml]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n" + series.String() + "    alert_rule_test:\n" + alerts.String()
	testFile := filepath.Join(dir, "test.yaml")
	if err := os.WriteFile(testFile, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool, "test", "rules", "test.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("promtool test rules: %v\n%s\n%s", err, out, test)
	}
}

// humanizeDuration is Prometheus's template function of that name for a
// value from a millisecond to an hour (prometheus/template).
func humanizeDuration(v float64) string {
	switch {
	case v < 1:
		return fmt.Sprintf("%.4gms", v*1000)
	case v < 60:
		return fmt.Sprintf("%.4gs", v)
	}
	return fmt.Sprintf("%dm %ds", int64(v)/60, int64(v)%60)
}

// TestLiteLLMCarriesEverySLOForm: each deployment's model_info.slo holds
// every target its class gives and the percentile they bind; a class
// without an SLO has none.
func TestLiteLLMCarriesEverySLOForm(t *testing.T) {
	sc := parse(t, everyForm)
	var cfg struct {
		ModelList []struct {
			ModelName string `yaml:"model_name"`
			ModelInfo struct {
				SLO map[string]float64 `yaml:"slo"`
			} `yaml:"model_info"`
		} `yaml:"model_list"`
	}
	if err := yaml.Unmarshal(render(t, ToLiteLLM, sc, planOf(t, sc), Options{}), &cfg); err != nil || len(cfg.ModelList) != 2 {
		t.Fatalf("%v: %+v", err, cfg)
	}
	want := map[string]map[string]float64{
		"chat":  {"ttft_ms": 2500, "e2e_ms": 20000, "tpot_ms": 60, "percentile": 99},
		"coder": {"ttft_ms": 3000, "tpot_ms": 60, "task_e2e_ms": 90000, "percentile": 99},
	}
	for _, d := range cfg.ModelList {
		if got := d.ModelInfo.SLO; !maps.Equal(got, want[d.ModelName]) {
			t.Errorf("%s: slo %v, want %v", d.ModelName, got, want[d.ModelName])
		}
	}
	legacy := testutil.Example(t, "chat") // slo: {ttft_p95_ms: 1500, e2e_p95_ms: 12000}
	if err := yaml.Unmarshal(render(t, ToLiteLLM, legacy, planOf(t, legacy), Options{}), &cfg); err != nil ||
		!maps.Equal(cfg.ModelList[0].ModelInfo.SLO, map[string]float64{"ttft_ms": 1500, "e2e_ms": 12000, "percentile": 95}) {
		t.Errorf("the older form: %v %+v", err, cfg.ModelList[0].ModelInfo)
	}
	sc.Classes[0].SLO = nil
	cfg.ModelList = nil
	if err := yaml.Unmarshal(render(t, ToLiteLLM, sc, planOf(t, sc), Options{}), &cfg); err != nil || cfg.ModelList[0].ModelInfo.SLO != nil {
		t.Errorf("no SLO: %v %+v", err, cfg.ModelList[0].ModelInfo)
	}
}

// TestLiteLLMRefusesKeysThatShareAVariable: two keys whose names differ
// only in case or punctuation would read one environment variable, so
// that both keys' requests would go out with one credential: the export
// is refused, naming both and the variable.
func TestLiteLLMRefusesKeysThatShareAVariable(t *testing.T) {
	sc := testutil.Example(t, "chat-and-batch")
	sc.Quotas = append(sc.Quotas, sc.Quotas[0])
	sc.Quotas[1].Name = strings.ToUpper(sc.Quotas[0].Name) + "."
	sc.Quotas[0].Name += "-"
	for i := range sc.Classes {
		sc.Classes[i].Quota = sc.Quotas[i%2].Name
	}
	p := planOf(t, sc)
	err := Write(io.Discard, ToLiteLLM, sc, p, Options{})
	clash, ok := errors.AsType[*KeyEnvClash](err)
	if !ok || clash.Quota != [2]int{0, 1} || clash.Env != KeyEnv(sc.Quotas[0].Name) || !strings.Contains(err.Error(), sc.Quotas[1].Name) {
		t.Fatalf("keys %q and %q: %v", sc.Quotas[0].Name, sc.Quotas[1].Name, err)
	}
	if err := Write(io.Discard, ToPrometheusRules, sc, p, Options{}); err != nil {
		t.Errorf("the rules, which name keys as they are, are refused too: %v", err)
	}
	// A key no deployment uses reads no variable: no clash.
	for i := range sc.Classes {
		sc.Classes[i].Quota = sc.Quotas[0].Name
	}
	if err := Write(io.Discard, ToLiteLLM, sc, planOf(t, sc), Options{}); err != nil {
		t.Errorf("a second key without a class: %v", err)
	}
}
