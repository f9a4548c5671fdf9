package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/importer"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/report"
)

// The judgement flags, the output format and the reading of measurement
// files shared by the commands that analyse measured ramps (import, knee,
// probe). The step table itself is rendered by package report.

// maxMeasurementBytes caps one input file of import and knee.
const maxMeasurementBytes = 256 << 20

// measurementFormats are the -o/--output formats of probe, knee and import.
var measurementFormats = []string{report.FormatTable, report.FormatJSON, report.FormatYAML, report.FormatCSV}

// judgement holds the knee-rule flags (docs/probe.md).
type judgement struct {
	deadline             time.Duration
	minGainPct           float64
	maxP95Fraction       float64
	collapseTolerancePct float64
	slo                  string
}

func (j *judgement) addFlags(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&j.deadline, "deadline", 12*time.Second, "a response counts towards goodput only if it ends within this; 0 for no deadline")
	cmd.Flags().Float64Var(&j.minGainPct, "min-gain-pct", analysis.DefaultMinGainPct, "knee: goodput must grow at least this many percent per step")
	cmd.Flags().Float64Var(&j.maxP95Fraction, "max-p95-fraction", analysis.DefaultMaxP95Fraction, "knee: E2E p95 must stay under this fraction of the deadline")
	cmd.Flags().Float64Var(&j.collapseTolerancePct, "collapse-tolerance-pct", analysis.DefaultCollapseTolerancePct, "goodput falls (collapse) only when it drops by more than this many percent and beyond its noise")
	cmd.Flags().StringVar(&j.slo, "slo", "", "goodput counts only the requests that meet every target, e.g. ttft:500ms,tpot:50ms,e2e:10s (each step reports its attainment)")
}

// options checks the flags and returns them as analysis options.
func (j *judgement) options() (analysis.Options, error) {
	switch {
	case j.deadline < 0:
		return analysis.Options{}, usageError{fmt.Errorf("--deadline must not be negative, got %s", j.deadline)}
	case !(j.minGainPct > 0 && j.minGainPct <= 1000):
		return analysis.Options{}, usageError{fmt.Errorf("--min-gain-pct must be above 0 and at most 1000, got %g", j.minGainPct)}
	case !(j.maxP95Fraction > 0 && j.maxP95Fraction <= 1):
		return analysis.Options{}, usageError{fmt.Errorf("--max-p95-fraction must be above 0 and at most 1, got %g", j.maxP95Fraction)}
	case !(j.collapseTolerancePct > 0 && j.collapseTolerancePct < 100):
		return analysis.Options{}, usageError{fmt.Errorf("--collapse-tolerance-pct must be above 0 and below 100, got %g", j.collapseTolerancePct)}
	}
	slo, err := sloFlag(j.slo)
	if err != nil {
		return analysis.Options{}, err
	}
	return analysis.Options{
		DeadlineMs:           float64(j.deadline) / float64(time.Millisecond),
		MinGainPct:           j.minGainPct,
		MaxP95Fraction:       j.maxP95Fraction,
		CollapseTolerancePct: j.collapseTolerancePct,
		SLO:                  slo,
	}, nil
}

// sloFlag reads --slo: no targets when it is empty, else targets that
// measure.ParseTargets reads and measure.Targets.Check accepts.
func sloFlag(text string) (measure.Targets, error) {
	if text == "" {
		return measure.Targets{}, nil
	}
	slo, err := measure.ParseTargets(text)
	if err == nil {
		if errs := slo.Check(""); len(errs) > 0 {
			err = errs[0]
		}
	}
	if err != nil {
		return measure.Targets{}, usageError{fmt.Errorf("--slo: %w", err)}
	}
	return slo, nil
}

// readMeasurement reads one input file; "-" is standard input.
func readMeasurement(in io.Reader, name string) (importer.File, error) {
	var r io.Reader = in
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return importer.File{}, fmt.Errorf("read %s: %w", name, err)
		}
		defer f.Close()
		if info, err := f.Stat(); err == nil && info.IsDir() {
			return importer.File{}, fmt.Errorf("%s is a directory: give a result file (a probe's output directory holds its requests.csv, %s)",
				name, filepath.Join(name, probe.RequestsFile))
		}
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxMeasurementBytes+1))
	if err != nil {
		return importer.File{}, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > maxMeasurementBytes {
		return importer.File{}, fmt.Errorf("%s is larger than %d MiB", name, maxMeasurementBytes>>20)
	}
	if name == "-" {
		name = "standard input"
	}
	return importer.File{Name: name, Data: data}, nil
}

// outNotRead refuses an --out that names one of the files a command
// reads (inputs; a directory stands for the steps.json it holds), however
// it is spelled, before anything is read or written: writing it would
// replace what was measured. An --out that does not exist yet, or "-",
// reads nothing.
func outNotRead(out string, inputs []string) error {
	if out == "" || out == "-" {
		return nil
	}
	oi, err := os.Stat(out)
	if err != nil {
		return nil
	}
	for _, in := range inputs {
		if in == "-" {
			continue
		}
		ii, err := os.Stat(in)
		if err != nil {
			continue
		}
		if ii.IsDir() {
			in = filepath.Join(in, probe.StepsFile)
			if ii, err = os.Stat(in); err != nil {
				continue
			}
		}
		if os.SameFile(oi, ii) {
			return usageError{fmt.Errorf("--out %s is %s, a file read: writing it would replace what was measured; name another file", out, in)}
		}
	}
	return nil
}

// notStepsFile refuses a probe's steps.json, which holds the probe's
// judgement rather than its requests, naming the requests.csv beside it.
func notStepsFile(f importer.File) error {
	if !isStepsFile(f.Data) {
		return nil
	}
	return fmt.Errorf("%s is a probe's steps.json, its judgement already made: give its requests.csv (%s) to judge its requests",
		f.Name, filepath.Join(filepath.Dir(f.Name), probe.RequestsFile))
}

// importDocument is the JSON and YAML form of an import: everything but
// the per-request rows, which are counted instead.
type importDocument struct {
	*importer.Imported
	RecordCount int `json:"record_count"`
}

// writeImport prints an import in one of measurementFormats: CSV is its
// step table alone.
func writeImport(w io.Writer, imp *importer.Imported, format string) error {
	if format == report.FormatCSV {
		return report.WriteStepCSV(w, imp.Steps)
	}
	if format != report.FormatTable {
		view := *imp
		view.Records = nil
		return report.WriteData(w, importDocument{Imported: &view, RecordCount: len(imp.Records)}, format)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "format: %s\n", imp.Format)
	for _, src := range imp.Sources {
		var details []string
		for _, d := range []string{src.Tool, src.Version, src.Model, src.Endpoint, src.Date} {
			if d != "" {
				details = append(details, d)
			}
		}
		fmt.Fprintf(&b, "source: %s (%s)\n", src.Name, strings.Join(details, "; "))
	}
	if len(imp.Records) > 0 {
		fmt.Fprintf(&b, "per-request rows: %d\n", len(imp.Records))
	}
	b.WriteByte('\n')
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if err := report.WriteStepTable(w, imp.Steps); err != nil {
		return err
	}
	if err := report.WriteAnalysis(w, imp.Analysis, append(imp.Notes, imp.Analysis.Notes...)); err != nil {
		return err
	}
	return writeSLO(w, imp.Analysis)
}
