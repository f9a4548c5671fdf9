package analysis

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/scenario"
)

// CurveFileUsage says how a curve file is used; every curve file carries
// it, and docs/probe.md and docs/import.md say the same.
const CurveFileUsage = "Use: append this file to a scenario that has no top-level latency block " +
	"(cat scenario.yaml curve.yaml > planned.yaml), or indent its latency block under a class."

// CurveFile renders a latency block as the curve file that planner probe
// writes (curve.yaml) and planner import --out writes: a scenario fragment
// whose only key is latency, under comment lines: the header, the usage,
// and, above each curve point, what a reader must know about it (429s and
// errors in its step, values estimated rather than measured). steps are
// the steps the points come from, matched by concurrency.
func CurveFile(lat scenario.Latency, steps []measure.Step, header []string) ([]byte, error) {
	var b bytes.Buffer
	for _, h := range header {
		fmt.Fprintf(&b, "# %s\n", h)
	}
	fmt.Fprintf(&b, "# %s\n", CurveFileUsage)
	if len(lat.Curve) > 0 {
		b.WriteString("# Each latency series is made non-decreasing over concurrency by isotonic regression (weighted by requests).\n")
	}
	b.WriteString("latency:\n")
	byConc := map[int]measure.Step{}
	for _, s := range steps {
		if _, seen := byConc[s.Concurrency]; !seen && !s.TooShort {
			byConc[s.Concurrency] = s
		}
	}
	if len(lat.Curve) > 0 {
		b.WriteString("  curve:\n")
	}
	for _, pt := range lat.Curve {
		if s, ok := byConc[pt.Concurrency]; ok {
			if marks := pointMarks(s); marks != "" {
				fmt.Fprintf(&b, "    # concurrency %d: %s\n", pt.Concurrency, marks)
			}
		}
		body, err := yaml.Marshal(pt)
		if err != nil {
			return nil, fmt.Errorf("rendering the curve point at %d: %w", pt.Concurrency, err)
		}
		for i, line := range strings.Split(strings.TrimRight(string(body), "\n"), "\n") {
			prefix := "      "
			if i == 0 {
				prefix = "    - "
			}
			b.WriteString(prefix + line + "\n")
		}
	}
	if lat.Knee != nil {
		fmt.Fprintf(&b, "  knee: %d\n", *lat.Knee)
	}
	if lat.KneeLowerBound {
		b.WriteString("  # No step failed the knee rule: the knee is a lower bound; probe to higher concurrency to find it.\n")
		b.WriteString("  knee_lower_bound: true\n")
	}
	if lat.KneeRefined != nil {
		fmt.Fprintf(&b, "  knee_refined: %d\n", *lat.KneeRefined)
	}
	for _, key := range []struct {
		name string
		d    *scenario.Dist
	}{{"ttft_ms", lat.TTFTMs}, {"tpot_ms", lat.TPOTMs}} {
		if key.d == nil {
			continue
		}
		body, err := yaml.Marshal(map[string]any{key.name: key.d})
		if err != nil {
			return nil, fmt.Errorf("rendering %s: %w", key.name, err)
		}
		for _, line := range strings.Split(strings.TrimRight(string(body), "\n"), "\n") {
			b.WriteString("  " + line + "\n")
		}
	}
	return b.Bytes(), nil
}

// pointMarks says what is special about the step behind a curve point.
func pointMarks(s measure.Step) string {
	var parts []string
	if s.RateLimited > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d answers were 429", s.RateLimited, s.Answers))
	}
	if s.Errors > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d requests failed", s.Errors, s.Requests))
	}
	if est := s.Estimated(); len(est) > 0 {
		parts = append(parts, "estimated, not measured: "+strings.Join(est, ", "))
	}
	if s.Refine {
		parts = append(parts, "a refinement step of the knee search")
	}
	return strings.Join(parts, "; ")
}

// PromptFileUsage says how a prompt file is used; every prompt file
// carries it, and docs/probe.md says the same.
const PromptFileUsage = "Use: add the keys under latency to a scenario's latency block, or append them to a curve.yaml " +
	"(grep -v '^latency:' prefill.yaml >> curve.yaml), whose latency block they then extend."

// PromptFile renders the latency keys that a prompt's cost gives
// (PromptLatency) as the file that planner probe writes for its prefill,
// cache and conversation modes (prefill.yaml): a scenario fragment whose
// only key is latency, holding prefill_ms_per_1k_tokens and cache, under
// comment lines: the header and the usage. Its keys sit two spaces in,
// as a curve file's do, so that they extend a curve file's latency block
// when appended to it without their latency line.
func PromptFile(lat scenario.Latency, header []string) ([]byte, error) {
	var b bytes.Buffer
	for _, h := range header {
		fmt.Fprintf(&b, "# %s\n", h)
	}
	fmt.Fprintf(&b, "# %s\n", PromptFileUsage)
	b.WriteString("latency:\n")
	keys := map[string]any{}
	if lat.PrefillMsPer1K > 0 {
		keys["prefill_ms_per_1k_tokens"] = lat.PrefillMsPer1K
	}
	if lat.Cache != nil {
		keys["cache"] = lat.Cache
	}
	if len(keys) == 0 {
		return nil, errors.New("no prompt cost to write: neither prefill_ms_per_1k_tokens nor cache")
	}
	body, err := yaml.Marshal(keys)
	if err != nil {
		return nil, fmt.Errorf("rendering the prompt's latency keys: %w", err)
	}
	for _, line := range strings.Split(strings.TrimRight(string(body), "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	return b.Bytes(), nil
}
