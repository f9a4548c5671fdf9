package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/scenario"
)

// Names of the files a run writes.
const (
	RequestsFile = "requests.csv"
	StepsFile    = "steps.json"
	CurveFile    = "curve.yaml"
)

// WriteFiles writes the run's outputs into dir, creating it: requests.csv
// (one row per request, analysis.WriteCSV), steps.json (Summary) and, when
// the run measured a latency curve, curve.yaml (a latency block to paste
// into a scenario). It returns the paths written.
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
	if err := analysis.WriteCSV(&csv, res.Records); err != nil {
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

// CurveYAML renders the measured latency curve and knee as a scenario
// latency block, under a comment that says where it came from. It fails
// when no step has successful responses with a measurable TPOT.
func CurveYAML(res *Result) ([]byte, error) {
	lat, err := res.Analysis.Latency()
	if err != nil {
		return nil, fmt.Errorf("latency curve: %w", err)
	}
	body, err := yaml.Marshal(struct {
		Latency scenario.Latency `json:"latency"`
	}{lat})
	if err != nil {
		return nil, fmt.Errorf("rendering the latency curve: %w", err)
	}
	head := fmt.Sprintf("# Measured by planner probe: %s, model %q, %s to %s, max_tokens %d, stop: %s.\n"+
		"# Paste the latency block into a scenario (or a class's latency).\n",
		redactURL(res.Config.BaseURL), res.Config.Model, res.Started.UTC().Format(time.RFC3339),
		res.Ended.UTC().Format(time.RFC3339), res.Config.MaxTokens, res.StopReason)
	return append([]byte(head), body...), nil
}
