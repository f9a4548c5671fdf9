package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/export"
)

func newExportCmd(s streams) *cobra.Command {
	var file, example, to, metricsFile, model string
	cmd := &cobra.Command{
		Use:   "export (FILE | -f FILE | --example NAME) --to " + strings.Join(export.Targets, "|") + " [--metrics FILE] [--model M] [-o yaml|json] [--out PATH]",
		Short: "Export a scenario's plan as alerting rules, gateway settings or client settings",
		Long: "Export plans a scenario (YAML or JSON; -f - reads standard input) and writes the\n" +
			"plan as the file of a tool a team already runs (docs/exports.md):\n\n" +
			"  prometheus-rules  Prometheus alerting rules: each class's TTFT and E2E p95 above\n" +
			"                    its SLO, its share of requests answered 429 above what a plan\n" +
			"                    that holds allows, and each key's use above the plan's usable\n" +
			"                    share, with the plan's numbers in the annotations. The metric\n" +
			"                    names they read are OpenTelemetry's GenAI histograms unless\n" +
			"                    --metrics names a mapping file of your own.\n" +
			"  litellm           LiteLLM router settings: per class a deployment with its rpm,\n" +
			"                    tpm and max_parallel_requests (its pool); --model sets the\n" +
			"                    provider's model.\n" +
			"  client            the client settings of every class (pool, pacing, admission,\n" +
			"                    retry, AIMD) as JSON, for any SDK.\n\n" +
			"The same files come from a stored plan: GET /v1/plans/{id}/export?to=TARGET.",
		Example: "  planner export scenario.yaml --to prometheus-rules --out planner-rules.yaml\n" +
			"  planner export scenario.yaml --to litellm --model openai/gpt-4o-mini\n" +
			"  planner export --example chat --to client",
	}
	addScenarioFlags(cmd, &file, &example, "export")
	cmd.Flags().StringVar(&to, "to", "", "what to export: "+strings.Join(export.Targets, ", "))
	cmd.Flags().StringVar(&metricsFile, "metrics", "", "prometheus-rules: a YAML file of the metric names and labels the rules read (docs/exports.md)")
	cmd.Flags().StringVar(&model, "model", "", "litellm: the provider's model of every deployment, as LiteLLM names it (default \""+export.DefaultModel+"\", a placeholder)")
	_ = cmd.RegisterFlagCompletionFunc("to", cobra.FixedCompletions(export.Targets, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagFilename("metrics", "yaml", "yml", "json")
	// -o defaults to the target's own format, which differs by target.
	out := &output{formats: []string{export.FormatYAML, export.FormatJSON}}
	cmd.Flags().StringVarP(&out.format, "output", "o", "", "output format: yaml or json (default: the target's own, JSON for client and YAML for the others)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(out.formats, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().StringVar(&out.path, "out", "", "write the output to this file instead of standard output")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if out.format != "" {
			if err := out.check(); err != nil {
				return err
			}
		}
		if !export.Known(to) {
			return usageError{fmt.Errorf("--to: give one of %s, got %q", strings.Join(export.Targets, ", "), to)}
		}
		opts := export.Options{Model: model, Format: out.format}
		if metricsFile != "" {
			if to != export.ToPrometheusRules {
				return usageError{fmt.Errorf("--metrics is for --to %s", export.ToPrometheusRules)}
			}
			data, err := os.ReadFile(metricsFile)
			if err != nil {
				return fmt.Errorf("read the metrics file: %w", err)
			}
			if opts.Metrics, err = export.ParseMetrics(data); err != nil {
				return fmt.Errorf("%s: %w", metricsFile, err)
			}
		}
		if model != "" && to != export.ToLiteLLM {
			return usageError{fmt.Errorf("--model is for --to %s", export.ToLiteLLM)}
		}
		if err := export.CheckModel(model); err != nil {
			return usageError{fmt.Errorf("--model: %w", err)}
		}
		a, err := newApp(cmd)
		if err != nil {
			return err
		}
		sc, p, err := planScenario(cmd.Context(), a, s.in, file, example)
		if err != nil {
			return err
		}
		return out.write(s, func(w io.Writer) error { return export.Write(w, to, sc, p, opts) })
	}
	return cmd
}
