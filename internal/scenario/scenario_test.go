package scenario

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

const good = `
quotas:
  - name: prod
    rpm: 5000
    tpm: 2000000
    token_accounting: max_tokens
latency:
  ttft_ms: {p50: 400, p95: 900}
  tpot_ms: {p50: 22, p95: 35}
classes:
  - name: chat
    quota: prod
    mode: interactive
    demand: {rps: 3}
    input_tokens: {p50: 800, p95: 2400}
    output_tokens: {p50: 200, p95: 600}
    max_tokens: 800
    slo: {ttft_p95_ms: 1500, e2e_p95_ms: 12000}
`

func TestParseGoodYAMLAndJSON(t *testing.T) {
	s, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if s.Classes[0].Demand.Rate() != 3 || *s.Classes[0].OutputTokens.P95 != 600 || s.Quotas[0].TPM != 2e6 {
		t.Fatalf("parsed %+v", s)
	}
	js := `{"quotas":[{"name":"k","rpm":60}],"latency":{"ttft_ms":{"fixed":300},"tpot_ms":{"mean":20,"stddev":5}},
	"classes":[{"name":"c","quota":"k","mode":"batch","demand":{"requests":1000,"within_hours":2},
	"input_tokens":{"samples":[100,200,300]},"output_tokens":{"fixed":50,"max":40}}]}`
	if _, err := Parse([]byte(js)); err != nil {
		t.Fatalf("JSON scenario: %v", err)
	}
}

func TestParseListsEveryProblemByPath(t *testing.T) {
	bad := strings.NewReplacer(
		"rpm: 5000", "rpm: -5",
		"quota: prod", "quota: nope",
		"{p50: 200, p95: 600}", "{p50: 200, p95: 100}",
		"max_tokens: 800", "max_tokens: lots",
	).Replace(good) + "    colour: blue\n"
	_, err := Parse([]byte(bad))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want Errors, got %v", err)
	}
	var paths []string
	for _, e := range errs {
		paths = append(paths, e.Path)
	}
	want := []string{
		"classes[0].colour",
		"classes[0].max_tokens",
		"classes[0].output_tokens.p95",
		"classes[0].quota",
		"quotas[0].rpm",
	}
	if !slices.Equal(paths, want) {
		t.Fatalf("paths %v, want %v\n%v", paths, want, err)
	}
	if !strings.Contains(err.Error(), "classes[0].output_tokens.p95: must be >= p50") {
		t.Errorf("message %q should say p95 must be >= p50", err)
	}
}

func TestCheckRules(t *testing.T) {
	tests := []struct {
		name, from, to, path string
	}{
		{"duplicate class", "classes:\n", "classes:\n  - {name: chat, quota: prod, mode: batch, input_tokens: {fixed: 1}, output_tokens: {fixed: 1}}\n", "classes[1].name"},
		{"two forms", "{p50: 800, p95: 2400}", "{p50: 800, p95: 2400, fixed: 5}", "classes[0].input_tokens"},
		{"p50 alone", "{p50: 800, p95: 2400}", "{p50: 800}", "classes[0].input_tokens.p95"},
		{"no form", "{p50: 800, p95: 2400}", "{max: 10}", "classes[0].input_tokens"},
		{"stddev alone", "{p50: 800, p95: 2400}", "{stddev: 10}", "classes[0].input_tokens.mean"},
		{"two demands", "demand: {rps: 3}", "demand: {rps: 3, rpm: 60}", "classes[0].demand"},
		{"requests alone", "demand: {rps: 3}", "demand: {requests: 300}", "classes[0].demand.within_hours"},
		{"max_tokens accounting", "    max_tokens: 800\n", "", "classes[0].max_tokens"},
		{"no latency", "latency:\n  ttft_ms: {p50: 400, p95: 900}\n  tpot_ms: {p50: 22, p95: 35}\n", "", "classes[0].latency"},
		{"tpot missing", "  tpot_ms: {p50: 22, p95: 35}\n", "", "latency.tpot_ms"},
		{"no limit", "    rpm: 5000\n    tpm: 2000000\n", "", "quotas[0]"},
		{"curve dup", "  tpot_ms: {p50: 22, p95: 35}\n", "  tpot_ms: {p50: 22, p95: 35}\n  curve:\n    - {concurrency: 1, ttft_p50_ms: 1, ttft_p95_ms: 2, tpot_p50_ms: 1, tpot_p95_ms: 1}\n    - {concurrency: 1, ttft_p50_ms: 1, ttft_p95_ms: 2, tpot_p50_ms: 1, tpot_p95_ms: 1}\n", "latency.curve[1].concurrency"},
		{"profile overlap", "demand: {rps: 3}", "demand: {rps: 3, profile: [{start_s: 600, duration_s: 300, factor: 2}, {start_s: 800, duration_s: 60, factor: 3}]}", "classes[0].demand.profile[1].start_s"},
		{"profile order", "demand: {rps: 3}", "demand: {rps: 3, profile: [{start_s: 600, duration_s: 60, factor: 2}, {start_s: 0, duration_s: 60, factor: 3}]}", "classes[0].demand.profile[1].start_s"},
		{"profile factor", "demand: {rps: 3}", "demand: {rps: 3, profile: [{start_s: 600, duration_s: 60}]}", "classes[0].demand.profile[0]"},
		{"lower bound without a knee", "  tpot_ms: {p50: 22, p95: 35}\n", "  tpot_ms: {p50: 22, p95: 35}\n  knee_lower_bound: true\n", "latency.knee_lower_bound"},
		{"refined without a knee", "  tpot_ms: {p50: 22, p95: 35}\n", "  tpot_ms: {p50: 22, p95: 35}\n  knee_refined: 12\n", "latency.knee_refined"},
		{"refined beside a lower bound", "  tpot_ms: {p50: 22, p95: 35}\n", "  tpot_ms: {p50: 22, p95: 35}\n  knee: 16\n  knee_refined: 12\n  knee_lower_bound: true\n", "latency.knee_refined"},
		{"refined knee of 0", "  tpot_ms: {p50: 22, p95: 35}\n", "  tpot_ms: {p50: 22, p95: 35}\n  knee: 16\n  knee_refined: 0\n", "latency.knee_refined"},
		{"curve p95", "  tpot_ms: {p50: 22, p95: 35}\n", "  tpot_ms: {p50: 22, p95: 35}\n  curve:\n    - {concurrency: 1, ttft_p50_ms: 5, ttft_p95_ms: 2, tpot_p50_ms: 1, tpot_p95_ms: 1}\n", "latency.curve[0].ttft_p95_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(good, tt.from, tt.to, 1)
			if doc == good {
				t.Fatalf("replacement %q not found", tt.from)
			}
			_, err := Parse([]byte(doc))
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("want Errors, got %v", err)
			}
			if !slices.ContainsFunc(errs, func(e FieldError) bool { return e.Path == tt.path }) {
				t.Fatalf("no problem at %s in:\n%v", tt.path, err)
			}
		})
	}
}

func TestDemandProfileParses(t *testing.T) {
	doc := strings.Replace(good, "demand: {rps: 3}", "demand: {rps: 3, profile: [{start_s: 600, duration_s: 300, factor: 2}, {start_s: 900, duration_s: 60, factor: 0}]}", 1)
	s, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []DemandWindow{{StartS: 600, DurationS: 300, Factor: 2}, {StartS: 900, DurationS: 60, Factor: 0}}
	if got := s.Classes[0].Demand.Profile; !slices.Equal(got, want) || s.Classes[0].Demand.Rate() != 3 {
		t.Fatalf("profile %+v rate %g, want %+v at 3 req/s", got, s.Classes[0].Demand.Rate(), want)
	}
}

func TestParseRejectsNonScenarios(t *testing.T) {
	for _, doc := range []string{"", "[1, 2]", "just text", "{quotas: [", "quotas: [{name: a, rpm: .nan}]", "quotas: [{name: a, rpm: 1e400}]"} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%q parsed", doc)
		}
	}
}

// TestParseRefusesRepeatedKeys: a key given twice, as when a probe's
// curve.yaml is appended to a scenario that has a latency block, is
// refused with the key named, in YAML and in JSON, rather than the last
// one silently winning.
func TestParseRefusesRepeatedKeys(t *testing.T) {
	for _, doc := range []string{
		good + "latency:\n  ttft_ms: {fixed: 100}\n  tpot_ms: {fixed: 10}\n",
		`{"quotas":[{"name":"k","rpm":60,"rpm":600}],"latency":{"ttft_ms":{"fixed":300},"tpot_ms":{"fixed":20}},
		"classes":[{"name":"c","quota":"k","mode":"batch","input_tokens":{"fixed":100},"output_tokens":{"fixed":50}}]}`,
	} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), "already set") {
			t.Errorf("a repeated key: %v", err)
		}
	}
	// with where it is, as every other problem of a scenario
	_, err := Parse([]byte(`{"quotas":[{"name":"k","rpm":60,"rpm":600}]}`))
	if want := `scenario: quotas[0].rpm: line 1: key "rpm" already set in this mapping`; err == nil || err.Error() != want {
		t.Errorf("a repeated key: %v, want %q", err, want)
	}
}

// TestParseNamesWhereANumberIsNotOne: .nan and .inf, which JSON cannot
// hold, are refused with the path and line of the value.
func TestParseNamesWhereANumberIsNotOne(t *testing.T) {
	_, err := Parse([]byte("quotas:\n  - name: k\n    rpm: .nan\n"))
	if want := "scenario: quotas[0].rpm: line 3: .nan is not a number JSON can hold"; err == nil || err.Error() != want {
		t.Errorf(".nan: %v, want %q", err, want)
	}
}

func TestWithDefaults(t *testing.T) {
	s, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	d := s.WithDefaults()
	q, c, p := d.Quotas[0], d.Classes[0], d.Policy
	if q.Headroom != 0.9 || q.BurstWindowS != 1 || q.ActiveHours != 24 {
		t.Errorf("quota defaults %+v", q)
	}
	if c.Weight != 1 || *c.ArrivalSCV != 1 || c.Latency == nil || c.Latency.TTFTMs == nil {
		t.Errorf("class defaults %+v", c)
	}
	if p.Allocation != "priority" || p.MonteCarloDraws != 20000 || *p.Seed != 1 || p.MaxPool != 1000 || p.KneeSafety.Safety("semi") != 0.8 {
		t.Errorf("policy defaults %+v", p)
	}
	if s.Quotas[0].Headroom != 0 || s.Classes[0].Latency != nil {
		t.Error("WithDefaults changed its receiver")
	}
}

func TestNullListsAreRefused(t *testing.T) {
	_, err := Parse([]byte(`{"quotas": null, "classes": null}`))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("null lists parsed: %v", err)
	}
	for _, path := range []string{"quotas", "classes"} {
		if !slices.ContainsFunc(errs, func(e FieldError) bool { return e.Path == path }) {
			t.Errorf("no problem at %s: %v", path, err)
		}
	}
}

// TestQuotaBoundsReadTheTags: the table other documents share is the
// tags' own numbers, and a document at a bound passes while one beyond it
// fails at that limit.
func TestQuotaBoundsReadTheTags(t *testing.T) {
	b := Bounds()
	want := map[string]float64{"rpm": 1e12, "tpm": 1e13, "itpm": 1e13, "otpm": 1e13, "rpd": 1e13, "tpd": 1e15}
	if !maps.Equal(b.LimitMax, want) || b.NameMaxLength != 64 || b.NamePattern != `^[A-Za-z0-9][A-Za-z0-9._-]*$` {
		t.Fatalf("bounds %+v", b)
	}
	for name, most := range b.LimitMax {
		for _, tc := range []struct {
			value float64
			ok    bool
		}{{most, true}, {most * 1.5, false}} {
			doc := fmt.Sprintf(`{"quotas":[{"name":"k","%s":%g}],"classes":[{"name":"c","quota":"k","mode":"batch","input_tokens":{"fixed":1},"output_tokens":{"fixed":1}}],"latency":{"ttft_ms":{"fixed":100},"tpot_ms":{"fixed":10}}}`, name, tc.value)
			_, err := Parse([]byte(doc))
			var errs Errors
			errors.As(err, &errs)
			bad := slices.ContainsFunc(errs, func(e FieldError) bool { return e.Path == "quotas[0]."+name })
			if bad == tc.ok {
				t.Errorf("%s = %g: problems %v", name, tc.value, err)
			}
		}
	}
}

// TestScheduleWithinActiveHours: a class may not run more hours a day than
// its key is used (active_hours, over which its daily limits are spread
// and its provisioned hours paid): 12 h on a key of 8 is refused at the
// schedule's hours, naming the key, where the plan said "over 8 h a day;
// this class runs 12 h of them".
func TestScheduleWithinActiveHours(t *testing.T) {
	doc := strings.Replace(good, "  - name: prod\n", "  - name: prod\n    active_hours: 8\n", 1) + `  - name: late
    quota: prod
    mode: interactive
    demand: {rps: 1}
    input_tokens: {p50: 1000, p95: 3000}
    output_tokens: {p50: 200, p95: 600}
    max_tokens: 800
    schedule: {start_hour: 23.5, hours: 12}
`
	if !strings.Contains(doc, "active_hours: 8") {
		t.Fatal("the test's key has no active_hours")
	}
	_, err := Parse([]byte(doc))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Path != "classes[1].schedule.hours" || !strings.Contains(errs[0].Message, "active_hours of 8") {
		t.Fatalf("%v: want one problem at classes[1].schedule.hours naming the key's active_hours of 8", err)
	}
	if _, err := Parse([]byte(strings.Replace(doc, "hours: 12}", "hours: 8}", 1))); err != nil {
		t.Errorf("8 h on a key of 8 active hours: %v", err)
	}
}

// TestBatchWithinActiveHours: a batch of one day may not take more hours
// than its key is used a day: 12 h on a key of 10 active hours is refused
// at within_hours, where the plan said "over 10 h a day; this class runs
// 12 h of them"; 10 h fits, and a batch over several days is not held to
// one day's hours.
func TestBatchWithinActiveHours(t *testing.T) {
	doc := strings.Replace(good, "  - name: prod\n", "  - name: prod\n    active_hours: 10\n", 1) + `  - name: nightly
    quota: prod
    mode: batch
    demand: {requests: 8000, within_hours: 12}
    input_tokens: {p50: 1000, p95: 3000}
    output_tokens: {p50: 200, p95: 600}
    max_tokens: 800
`
	if !strings.Contains(doc, "active_hours: 10") {
		t.Fatal("the test's key has no active_hours")
	}
	_, err := Parse([]byte(doc))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Path != "classes[1].demand.within_hours" || !strings.Contains(errs[0].Message, "active_hours of 10") {
		t.Fatalf("%v: want one problem at classes[1].demand.within_hours naming the key's active_hours of 10", err)
	}
	for _, hours := range []string{"10", "48"} {
		if _, err := Parse([]byte(strings.Replace(doc, "within_hours: 12}", "within_hours: "+hours+"}", 1))); err != nil {
			t.Errorf("a batch within %s h on a key of 10 active hours: %v", hours, err)
		}
	}
}

// TestSchedule: a class's schedule is read, wraps past midnight, and a
// batch must finish within it; an hour of 24 is not a start.
func TestSchedule(t *testing.T) {
	night := good + `  - name: nightly
    quota: prod
    mode: batch
    demand: {requests: 8000, within_hours: 6}
    input_tokens: {p50: 1000, p95: 3000}
    output_tokens: {p50: 200, p95: 600}
    max_tokens: 800
    schedule: {start_hour: 22, hours: 6}
`
	s, err := Parse([]byte(night))
	if err != nil {
		t.Fatal(err)
	}
	sch := s.Classes[1].Schedule
	for h, want := range map[float64]bool{21.9: false, 22: true, 23.5: true, 0: true, 3.99: true, 4: false, 12: false} {
		if sch.Covers(h) != want {
			t.Errorf("22:00 for 6 h covers %g: %v, want %v", h, !want, want)
		}
	}
	if s.Classes[0].Schedule.Covers(13) != true || s.Classes[0].Schedule.HoursPerDay() != 24 {
		t.Error("a class without a schedule runs all day")
	}
	for _, tc := range []struct{ edit, path string }{
		{"within_hours: 6}", "classes[1].demand.within_hours"},
		{"start_hour: 22,", "classes[1].schedule.start_hour"},
	} {
		bad := strings.Replace(night, tc.edit, map[string]string{"within_hours: 6}": "within_hours: 7}", "start_hour: 22,": "start_hour: 24,"}[tc.edit], 1)
		_, err := Parse([]byte(bad))
		var errs Errors
		if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Path != tc.path {
			t.Errorf("%s: %v, want one problem at %s", tc.edit, err, tc.path)
		}
	}
}
