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
