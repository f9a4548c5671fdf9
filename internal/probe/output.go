package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/redact"
)

// Names of the files a run writes.
const (
	RequestsFile = "requests.csv"
	StepsFile    = "steps.json"
	CurveFile    = "curve.yaml"
	// PromptFile is what a prefill ladder, a cache comparison or a
	// conversation writes instead of a curve file (PromptYAML).
	PromptFile = "prefill.yaml"
)

// WriteFiles writes the run's outputs into dir, creating it: requests.csv
// (one row per request, measure.WriteCSV), steps.json (Summary) and, when
// the run measured a latency curve, curve.yaml (CurveYAML), or, for a
// prefill ladder, a cache comparison or a conversation that measured a
// prompt's cost, prefill.yaml (PromptYAML). A curve file or prompt file
// that an earlier run left in dir and this run does not write is
// removed, so that the directory holds one run's files: an earlier
// curve.yaml beside a run that measured none would be taken for its
// measurement. It returns the paths written.
func WriteFiles(dir string, res *Result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the output directory: %w", err)
	}
	var written []string
	write := func(name string, data []byte) error {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		written = append(written, p)
		return nil
	}
	// An earlier run's curve and prompt files go before this run writes
	// anything, so that a failure below leaves none of them either.
	for _, name := range []string{CurveFile, PromptFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("removing an earlier run's %s: %w", name, err)
		}
	}
	var csv bytes.Buffer
	if err := measure.WriteCSV(&csv, res.Records); err != nil {
		return written, fmt.Errorf("rendering %s: %w", RequestsFile, err)
	}
	if err := write(RequestsFile, csv.Bytes()); err != nil {
		return written, err
	}
	steps, err := json.MarshalIndent(res.Summary(), "", "  ")
	if err != nil {
		return written, fmt.Errorf("rendering %s: %w", StepsFile, err)
	}
	if err := write(StepsFile, append(steps, '\n')); err != nil {
		return written, err
	}
	if res.Config.promptMode() != "" {
		prompt, err := PromptYAML(res)
		if err != nil {
			return written, nil // no prompt cost measured; steps.json says why in its notes
		}
		return written, write(PromptFile, prompt)
	}
	curve, err := CurveYAML(res)
	if err != nil {
		return written, nil // no curve measured; steps.json says why in its notes
	}
	return written, write(CurveFile, curve)
}

// PromptYAML renders what a prefill ladder, a cache comparison or a
// conversation measured of a prompt's cost as the prompt file
// (analysis.PromptFile): a scenario fragment whose only key is latency,
// with prefill_ms_per_1k_tokens and cache, under comments that say where
// it was measured and, for a prefill line, its base TTFT. It fails when
// the run measured none of them.
func PromptYAML(res *Result) ([]byte, error) {
	lat, ok := analysis.PromptLatency(res.Analysis)
	if !ok {
		return nil, fmt.Errorf("the %s run measured no prompt cost", res.Config.promptMode())
	}
	head := []string{fmt.Sprintf("Measured by planner probe (%s): %s, model %q, %s to %s, stop: %s.",
		res.Config.promptMode(), redact.URL(res.Config.BaseURL), res.Config.Model, res.Started.UTC().Format(time.RFC3339),
		res.Ended.UTC().Format(time.RFC3339), res.StopReason)}
	if p := res.Analysis.Prefill; p != nil && lat.PrefillMsPer1K > 0 {
		head = append(head, fmt.Sprintf("TTFT = %.1f ms + %g ms per 1,000 uncached input tokens (95 %% interval %g to %g, R² %.3f, %d requests at concurrency 1).",
			p.BaseMs, p.MsPer1K, p.MsPer1KCI.Lo, p.MsPer1KCI.Hi, p.R2, p.Requests))
	}
	if c := res.Analysis.Cache; c != nil && lat.Cache != nil {
		head = append(head, fmt.Sprintf("A repeated prefix of %.0f tokens had %.0f cached; it saved %.1f ms of TTFT (95 %% interval %.1f to %.1f) against fresh prompts of %.0f tokens.",
			c.PrefixTokens, c.CachedRepeated, c.SavingMs, c.SavingMsCI.Lo, c.SavingMsCI.Hi, c.InputTokens))
	}
	if c := res.Analysis.Conversation; c != nil && c.HitRate != nil {
		head = append(head, fmt.Sprintf("In tasks of %d calls the cache served %.3g of each call's earlier context.", len(c.Calls), *c.HitRate))
	}
	return analysis.PromptFile(lat, head)
}

// CurveYAML renders the measured latency curve and knee as the curve
// file (analysis.CurveFile): a scenario fragment whose only key is
// latency, with knee_lower_bound when no step failed the knee rule (every
// step passed, or the run stopped first) and a search's knee_refined,
// under comments that say where it was measured and mark points whose
// steps met 429s or errors. It fails when no step has successful
// responses with a measurable TPOT.
func CurveYAML(res *Result) ([]byte, error) {
	lat, err := analysis.Latency(res.Analysis)
	if err != nil {
		return nil, fmt.Errorf("latency curve: %w", err)
	}
	head := []string{fmt.Sprintf("Measured by planner probe: %s, model %q, %s to %s, max_tokens %d, stop: %s.",
		redact.URL(res.Config.BaseURL), res.Config.Model, res.Started.UTC().Format(time.RFC3339),
		res.Ended.UTC().Format(time.RFC3339), res.Config.maxTokens(), res.StopReason)}
	if k, resolution := analysis.SearchRefined(res.Analysis); k != nil {
		head = append(head, fmt.Sprintf("The knee search refined the knee to %d (resolution %d): knee_refined below, which a plan budgets with; knee is the doubling rule's.", *k, *resolution))
	}
	if res.Analysis.KneeLowerBound && res.StopReason != StopCompleted {
		head = append(head, fmt.Sprintf("The run stopped (%s) before any step failed the knee rule: its knee is a lower bound.", res.StopReason))
	}
	return analysis.CurveFile(lat, res.Analysis.Steps, head)
}
