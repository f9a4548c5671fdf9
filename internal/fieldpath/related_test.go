package fieldpath

import "testing"

func TestRelated(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"classes[1]", "classes[1]", true},
		{"classes[1]", "classes[1].output_tokens.p95", true},
		{"classes[1].output_tokens.p95", "classes[1]", true},
		{"classes", "classes[0]", true},
		{"", "quotas[0].name", true},
		{"body", "body.scenario", true},
		{"classes[1]", "classes[10]", false},
		{"classes[1].output_tokens", "classes[1].output_tokens_max", false},
		{"quotas[0].name", "quotas[0].rpm", false},
	} {
		if got := Related(tc.a, tc.b); got != tc.want {
			t.Errorf("Related(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
