package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/importer"
)

// The step table, the knee summary and the judgement flags shared by the
// commands that analyse measured ramps (import, knee).

// maxMeasurementBytes caps one input file of import and knee.
const maxMeasurementBytes = 256 << 20

// judgement holds the knee-rule flags (DESIGN §2).
type judgement struct {
	deadline       time.Duration
	minGainPct     float64
	maxP95Fraction float64
}

func (j *judgement) addFlags(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&j.deadline, "deadline", 12*time.Second, "a response counts towards goodput only if it ends within this; 0 for no deadline")
	cmd.Flags().Float64Var(&j.minGainPct, "min-gain-pct", analysis.DefaultMinGainPct, "knee: goodput must grow at least this many percent per step")
	cmd.Flags().Float64Var(&j.maxP95Fraction, "max-p95-fraction", analysis.DefaultMaxP95Fraction, "knee: E2E p95 must stay under this fraction of the deadline")
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
	}
	return analysis.Options{
		DeadlineMs:     float64(j.deadline) / float64(time.Millisecond),
		MinGainPct:     j.minGainPct,
		MaxP95Fraction: j.maxP95Fraction,
	}, nil
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

// importJSON is the --json form of an import: everything but the
// per-request rows, which are counted instead.
type importJSON struct {
	*importer.Imported
	RecordCount int `json:"record_count"`
}

func writeImportJSON(w io.Writer, imp *importer.Imported) error {
	view := *imp
	view.Records = nil
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(importJSON{Imported: &view, RecordCount: len(imp.Records)})
}

// writeImportReport prints the sources, the step table, the knee summary
// and the notes.
func writeImportReport(w io.Writer, imp *importer.Imported) error {
	var b strings.Builder
	fmt.Fprintf(&b, "format: %s\n", imp.Format)
	for _, src := range imp.Sources {
		var details []string
		for _, d := range []string{src.Tool, src.Version, src.Model, src.Date} {
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
	if err := writeStepTable(w, imp.Steps); err != nil {
		return err
	}
	return writeAnalysis(w, imp.Analysis, append(imp.Notes, imp.Analysis.Notes...))
}

// writeStepTable prints one line per step. Rates are per second, times in
// milliseconds; "-" marks a figure the source did not give, "*" an
// estimated concurrency and "~" a goodput derived from throughput.
func writeStepTable(w io.Writer, steps []analysis.Step) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conc\trate\treqs\tok\t429\terr\tgoodput\tthrpt\tout_tps\tttft_p50\tttft_p95\ttpot_p50\ttpot_p95\te2e_p50\te2e_p95\t")
	var estimated, derived bool
	for _, s := range steps {
		conc := strconv.Itoa(s.Concurrency)
		if s.Concurrency == 0 {
			conc = "?"
		}
		if s.ConcurrencyEstimated {
			conc += "*"
			estimated = true
		}
		goodput := strconv.FormatFloat(s.GoodputRPS, 'f', 3, 64)
		if s.GoodputFromThroughput {
			goodput += "~"
			derived = true
		}
		counts := []string{strconv.Itoa(s.Requests), strconv.Itoa(s.OK), strconv.Itoa(s.RateLimited), strconv.Itoa(s.Errors)}
		if s.CountsUnknown {
			counts = []string{"-", "-", "-", "-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			conc, num(s.RateRPS, 3), counts[0], counts[1], counts[2], counts[3],
			goodput, strconv.FormatFloat(s.ThroughputRPS, 'f', 3, 64), num(s.OutputTPS, 1),
			num(s.TTFTP50Ms, 1), num(s.TTFTP95Ms, 1), num(s.TPOTP50Ms, 2), num(s.TPOTP95Ms, 2),
			num(s.E2EP50Ms, 1), num(s.E2EP95Ms, 1))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var legend []string
	legend = append(legend, "rates per second, times in ms, - not given")
	if estimated {
		legend = append(legend, "* concurrency estimated")
	}
	if derived {
		legend = append(legend, "~ goodput derived from throughput")
	}
	_, err := fmt.Fprintf(w, "(%s)\n", strings.Join(legend, "; "))
	return err
}

// num prints v with d decimals, or "-" for 0 (not given).
func num(v float64, d int) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// writeAnalysis prints the knee, collapse point, quota_limited, the USL fit
// and the notes.
func writeAnalysis(w io.Writer, res analysis.Result, notes []string) error {
	var b strings.Builder
	quota := "no"
	if res.QuotaLimited {
		quota = "yes (429s at or below the knee: the quota binds, not the model)"
	}
	fmt.Fprintf(&b, "\nknee: %s   collapse: %s   quota-limited: %s\n", intOrNone(res.Knee), intOrNone(res.Collapse), quota)
	if u := res.USL; u != nil {
		peak := "none (throughput does not turn down)"
		if u.Peak != nil {
			peak = strconv.FormatFloat(*u.Peak, 'f', 1, 64)
		}
		fmt.Fprintf(&b, "USL: alpha=%.4g beta=%.4g gamma=%.4g R²=%.3f peak N*=%s\n", u.Alpha, u.Beta, u.Gamma, u.R2, peak)
	} else {
		b.WriteString("USL: not fitted (it needs throughput at three or more concurrencies)\n")
	}
	if len(notes) > 0 {
		b.WriteString("notes:\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func intOrNone(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}
