package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
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
)

// WriteFiles writes the run's outputs into dir, creating it: requests.csv
// (one row per request, measure.WriteCSV), steps.json (Summary) and, when
// the run measured a latency curve, curve.yaml (CurveYAML). It returns the
// paths written.
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
	curve, err := CurveYAML(res)
	if err != nil {
		return written, nil // no curve measured; steps.json says why in its notes
	}
	return written, write(CurveFile, curve)
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
