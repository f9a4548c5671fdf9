package fieldpath

import (
	"slices"
	"testing"
)

func TestCompareOrdersLikeTheDocument(t *testing.T) {
	paths := []string{
		"quotas[0].rpm", "classes[10].name", "classes[2].output_tokens.p95", "classes[2]",
		"classes[2].input_tokens", "latency.curve[1].concurrency", "", "classes[2].output_tokens.p50",
	}
	slices.SortStableFunc(paths, Compare)
	want := []string{
		"", "classes[2]", "classes[2].input_tokens", "classes[2].output_tokens.p50",
		"classes[2].output_tokens.p95", "classes[10].name", "latency.curve[1].concurrency", "quotas[0].rpm",
	}
	if !slices.Equal(paths, want) {
		t.Fatalf("sorted %q\nwant   %q", paths, want)
	}
	if Compare("tiers[1]", "tiers[1]") != 0 {
		t.Error("a path differs from itself")
	}
}

func TestErrorsRead(t *testing.T) {
	for _, tc := range []struct {
		errs Errors
		want string
	}{
		{Errors{{Path: "tiers[2].rpm", Message: "must be >= 0"}}, "tiers[2].rpm: must be >= 0"},
		{Errors{{Message: "give at least one quota"}}, "give at least one quota"},
		{Errors{{Path: "quotas", Message: "give at least one quota"}, {Path: "classes[0].name", Message: "required"}},
			"2 problems:\n  quotas: give at least one quota\n  classes[0].name: required"},
	} {
		if got := tc.errs.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestPathsAreBuiltAndRenamed(t *testing.T) {
	if got := Join(Index(Join("open_loop", "rates_rps"), 1), ""); got != "open_loop.rates_rps[1]" {
		t.Errorf("built %q", got)
	}
	if Join("", "steps") != "steps" || Join("body", "[0]") != "body[0]" {
		t.Error("Join at the root or of an index")
	}
	fields := map[string]string{"steps": "S", "budget.max_requests": "R", "open_loop": "O", "": "ROOT?"}
	flags := Names{Fields: fields}
	body := Names{Fields: fields, Below: true}
	for _, tc := range []struct{ path, flag, body string }{
		{"steps[2]", "S", "S[2]"},
		{"steps", "S", "S"},
		{"budget.max_requests", "R", "R"},
		{"budget.max_tokens_total", "budget.max_tokens_total", "budget.max_tokens_total"},
		{"open_loop.rates_rps[1]", "O", "O.rates_rps[1]"},
		{"stepsize", "stepsize", "stepsize"},
		{"", "", ""},
	} {
		if got := flags.Of(tc.path); got != tc.flag {
			t.Errorf("flag of %q = %q, want %q", tc.path, got, tc.flag)
		}
		if got := body.Of(tc.path); got != tc.body {
			t.Errorf("body location of %q = %q, want %q", tc.path, got, tc.body)
		}
	}
	if got := (Names{Fields: fields, Other: "body"}).Of("warmup"); got != "body" {
		t.Errorf("an unnamed field is %q, want the fallback", got)
	}
	got := body.Rename([]Error{{Path: "steps[1]", Message: "m"}})
	if len(got) != 1 || got[0] != (Error{Path: "S[1]", Message: "m"}) {
		t.Errorf("renamed %+v", got)
	}
}
