package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/signed"
	"github.com/plannerdev/planner/internal/verify"
)

// validation holds the flags of `planner plan --validate`: the options
// of the validation they bind, and those they set.
type validation struct {
	on          bool
	opts        verify.Options
	apiKeyEnv   string
	maxRequests int
}

// validateOnly begins the help of every flag that only a validation reads.
const validateOnly = "with --validate:"

func (v *validation) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&v.on, "validate", false, "after planning, validate the plan against --base-url: the classes of each endpoint together, each a short probe at its pool and then at 1.25 × it, compared with the model")
	f.StringVar(&v.opts.Probe.BaseURL, "base-url", "", "with --validate: API root of the endpoint, e.g. http://127.0.0.1:8000/v1")
	f.StringVar(&v.opts.Probe.Model, "model", "", "with --validate: model (or Azure deployment) name")
	f.StringVar(&v.apiKeyEnv, "api-key-env", defaultAPIKeyEnv, "with --validate: environment variable holding the API key (none is sent when it is unset)")
	f.StringVar(&v.opts.Probe.APIKeyHeader, "api-key-header", probe.DefaultAPIKeyHeader, `with --validate: header carrying the key: "Authorization" (Bearer) or "api-key" (Azure OpenAI)`)
	optionalInt(f, &v.opts.RequestsPerStep, "requests-per-step", 0, "with --validate: requests per step, warm-up included (default max(40, 3×concurrency) + concurrency; fewer than max(40, 3×concurrency) measured is refused)")
	optionalFloat(f, &v.opts.TolerancePct, "tolerance-pct", verify.DefaultTolerancePct, "with --validate: throughput, TTFT p95 and E2E p95 may lie this many percent of the prediction beyond their measured 95 % intervals")
	optionalDuration(f, &v.opts.Probe.Deadline, "deadline", probe.DefaultDeadline, "with --validate: per-request deadline, retries included")
	f.IntVar(&v.maxRequests, "max-requests", 0, "with --validate: budget of HTTP requests for the whole validation (0: only the steps bound them)")
	optionalDuration(f, &v.opts.Probe.Budget.MaxDuration, "max-duration", probe.DefaultMaxDuration, "with --validate: budget of wall time for the whole validation")
}

// validateFlags names a validation's settings (verify.Options.Validate's
// paths) as the flags of planner plan --validate.
var validateFlags = fieldpath.Names{Fields: map[string]string{
	"tolerance_pct":             "--tolerance-pct",
	"requests_per_step":         "--requests-per-step",
	"probe.base_url":            "--base-url",
	"probe.model":               "--model",
	"probe.api_key_header":      "--api-key-header",
	"probe.deadline":            "--deadline",
	"probe.budget.max_requests": "--max-requests",
	"probe.budget.max_duration": "--max-duration",
}}

// config checks the flags and returns the base probe of the validation.
func (v *validation) config(cmd *cobra.Command) (probe.Config, error) {
	if !v.on {
		// Every flag that only a validation reads says so in its help.
		var given []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Changed && strings.HasPrefix(f.Usage, validateOnly) {
				given = append(given, "--"+f.Name)
			}
		})
		switch len(given) {
		case 0:
		case 1:
			return probe.Config{}, usageError{fmt.Errorf("%s needs --validate", given[0])}
		default:
			return probe.Config{}, usageError{fmt.Errorf("%s need --validate", strings.Join(given, ", "))}
		}
		return probe.Config{}, nil
	}
	if v.opts.Probe.BaseURL == "" || v.opts.Probe.Model == "" {
		return probe.Config{}, usageError{errors.New("--validate needs --base-url and --model")}
	}
	if err := budgetFlag("--max-requests", v.maxRequests, "requests", "the steps bound them"); err != nil {
		return probe.Config{}, err
	}
	cfg := &v.opts.Probe
	cfg.Seed = probe.NewSeed()
	if v.maxRequests != 0 {
		cfg.Budget.MaxRequests = optional.Of(v.maxRequests)
	}
	cfg.APIKey = os.Getenv(v.apiKeyEnv)
	if cfg.APIKey == "" && cmd.Flags().Changed("api-key-env") {
		return probe.Config{}, usageError{fmt.Errorf("--api-key-env: environment variable %s is empty or unset", v.apiKeyEnv)}
	}
	if errs := v.opts.Validate(); len(errs) > 0 {
		return probe.Config{}, usageError{validateFlags.Rename(errs)}
	}
	return *cfg, nil
}

// planAndValidation is the JSON and YAML form of a validated plan.
type planAndValidation struct {
	Plan       *plan.Plan     `json:"plan"`
	Validation *verify.Report `json:"validation"`
}

// writePlanValidation writes a plan and its validation in one of
// report.PlanFormats; CSV is the validation's table alone (the plan's is
// planner plan -o csv), as one CSV table holds one kind of row.
func writePlanValidation(w io.Writer, p *plan.Plan, rep *verify.Report, format string) error {
	switch format {
	case report.FormatJSON, report.FormatYAML:
		return report.WriteData(w, planAndValidation{Plan: p, Validation: rep}, format)
	case report.FormatCSV:
		return writeValidationCSV(w, rep)
	}
	if err := report.WritePlan(w, p, format); err != nil {
		return err
	}
	return writeValidation(w, rep, format == "markdown")
}

// writeValidation prints a validation as a table (Markdown or text) with
// each class's reasons.
func writeValidation(w io.Writer, rep *verify.Report, markdown bool) error {
	var b strings.Builder
	if markdown {
		fmt.Fprintf(&b, "\n## Validation: %s\n\n%s.\n\n", rep.Verdict, upperFirst(rep.Summary))
		b.WriteString("| class | pool | concurrency | in flight on the endpoint | throughput predicted / measured (req/s) | error | TTFT p95 predicted / measured (ms) | E2E p95 predicted / measured (ms) | 429s | verdict |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	} else {
		fmt.Fprintf(&b, "\nVALIDATION: %s (%s)\n", strings.ToUpper(rep.Verdict), rep.Summary)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	if !markdown {
		fmt.Fprintln(tw, "CLASS\tPOOL\tCONC\tIN FLIGHT\tREQ/S PRED\tREQ/S MEAS\tERROR\tTTFT p95 PRED\tTTFT p95 MEAS\tE2E p95 PRED\tE2E p95 MEAS\t429s\tVERDICT")
	}
	for _, c := range rep.Classes {
		if len(c.Points) == 0 {
			row(tw, markdown, c.Class, fmt.Sprint(c.Pool), "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", c.Verdict)
		}
		for _, pt := range c.Points {
			meas, errPct, ttft, e2e, limited := "-", "-", "-", "-", "-"
			if m := pt.Measured; m != nil {
				meas, limited = fmt.Sprintf("%.2f", m.ThroughputRPS), fmt.Sprint(m.RateLimited)
				errPct = signed.Pct(pt.RelativeErrorPct.ThroughputRPS)
				if m.OK > 0 { // a latency is measured over requests that succeeded
					ttft, e2e = fmt.Sprintf("%.0f", m.TTFTP95Ms), fmt.Sprintf("%.0f", m.E2EP95Ms)
				}
			}
			row(tw, markdown, c.Class, fmt.Sprint(c.Pool), fmt.Sprint(pt.Concurrency), fmt.Sprint(pt.Load), fmt.Sprintf("%.2f", pt.Predicted.ThroughputRPS), meas, errPct,
				fmt.Sprintf("%.0f", pt.Predicted.TTFTP95Ms), ttft, fmt.Sprintf("%.0f", pt.Predicted.E2EP95Ms), e2e, limited, c.Verdict)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range rep.Classes {
		fmt.Fprintf(&b, "\n%s (%s, prompts of %d tokens, %d output tokens):\n", c.Class, c.Verdict, c.InputTokens, c.OutputTokens)
		if t := c.Task; t != nil {
			fmt.Fprintf(&b, "  - %s\n", taskLine(t))
		}
		for _, r := range c.Reasons {
			fmt.Fprintf(&b, "  - %s\n", r)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// taskLine says an agent task class's validation in one line: the tasks
// replayed, and TTFT and task E2E at the percentile predicted and
// measured, with the goodput.
func taskLine(t *verify.TaskCheck) string {
	at := "p" + strconv.FormatFloat(t.Percentile, 'f', -1, 64)
	s := fmt.Sprintf("tasks of %d calls, %.0f ms of tool time after each, context %s, %d in flight: TTFT %s predicted %.0f ms", t.Calls, t.ToolMs, t.Context, t.TasksInFlight, at, t.Predicted.TTFTMs)
	m := t.Measured
	if m == nil {
		return s + fmt.Sprintf(", task E2E %s predicted %.0f ms; no task measured", at, t.Predicted.TaskE2EMs)
	}
	s += fmt.Sprintf(" / measured %.0f ms, task E2E %s predicted %.0f ms / measured %.0f ms over %d tasks (%d failed), %d 429s", m.TTFTMs, at, t.Predicted.TaskE2EMs, m.TaskE2EMs, m.Tasks, m.FailedTasks, m.RateLimited)
	if g := m.Goodput; g != nil {
		s += fmt.Sprintf(", goodput %d of %d tasks meeting every target", g.Met, m.Tasks)
	}
	return s
}

// validationCSVHeader are the columns of writeValidationCSV.
var validationCSVHeader = []string{"class", "pool", "concurrency", "predicted_throughput_rps", "measured_throughput_rps",
	"predicted_ttft_p95_ms", "measured_ttft_p95_ms", "predicted_e2e_p95_ms", "measured_e2e_p95_ms", "rate_limited", "verdict"}

// writeValidationCSV writes a validation as CSV, one row per class and
// concurrency as the table has them; a point the probe did not reach has
// empty measured cells, and a class with no points one row without a
// concurrency.
func writeValidationCSV(w io.Writer, rep *verify.Report) error {
	var rows [][]string
	for _, c := range rep.Classes {
		if len(c.Points) == 0 {
			rows = append(rows, []string{c.Class, strconv.Itoa(c.Pool), "", "", "", "", "", "", "", "", c.Verdict})
		}
		for _, pt := range c.Points {
			meas, ttft, e2e, limited := "", "", "", ""
			if m := pt.Measured; m != nil {
				meas, ttft, e2e, limited = report.CSVNumber(m.ThroughputRPS), report.CSVNumber(m.TTFTP95Ms), report.CSVNumber(m.E2EP95Ms), strconv.Itoa(m.RateLimited)
			}
			rows = append(rows, []string{c.Class, strconv.Itoa(c.Pool), strconv.Itoa(pt.Concurrency),
				report.CSVNumber(pt.Predicted.ThroughputRPS), meas, report.CSVNumber(pt.Predicted.TTFTP95Ms), ttft,
				report.CSVNumber(pt.Predicted.E2EP95Ms), e2e, limited, c.Verdict})
		}
	}
	return report.WriteCSV(w, validationCSVHeader, rows)
}

// row writes one table row, as Markdown or tab-separated.
func row(w io.Writer, markdown bool, cells ...string) {
	if markdown {
		// Markdown rows pair predicted and measured in one cell.
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s / %s | %s | %s / %s | %s / %s | %s | %s |\n",
			cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7], cells[8], cells[9], cells[10], cells[11], cells[12])
		return
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// options are the validation's options around its base probe.
func (v *validation) options(base probe.Config) verify.Options {
	o := v.opts
	o.Probe = base
	return o
}
