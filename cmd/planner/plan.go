package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/validate"
)

// Output formats of `planner plan`.
var planFormats = []string{"table", "json", "yaml", "markdown"}

func newPlanCmd(s streams) *cobra.Command {
	var file, example, output string
	var v validation
	cmd := &cobra.Command{
		Use:   "plan (-f FILE | --example NAME) [--validate --base-url URL --model M]",
		Short: "Plan per-class pools for a scenario",
		Long: "Plan reads a scenario (YAML or JSON; -f - reads standard input) and prints,\n" +
			"for every class, its pool, the constraint that binds it, the smallest pool its\n" +
			"demand needs, predictions, client settings, and remedies when it does not fit.\n\n" +
			"With --validate it then checks the plan against the endpoint: for each class a\n" +
			"short closed-loop probe at its pool and at ceil(1.25 × pool), with prompts of the\n" +
			"class's input p50 and (ignore_eos) outputs of its mean length, compared with the\n" +
			"model's throughput, TTFT p95 and E2E p95 at the same concurrencies; verdict ok,\n" +
			"degraded or fails (exit status 1 when it fails).\n\n" +
			"Examples shipped with planner: " + strings.Join(planner.ExampleNames(), ", ") + ".",
		Example: "  planner plan --example chat\n  planner plan -f scenario.yaml -o json\n" +
			"  planner plan -f scenario.yaml --validate --base-url http://127.0.0.1:8000/v1 --model my-model",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !oneOf(output, planFormats) {
				return usageError{fmt.Errorf("--output must be one of %s, got %q", strings.Join(planFormats, ", "), output)}
			}
			base, err := v.config(cmd)
			if err != nil {
				return err
			}
			sc, p, err := planScenario(s.in, file, example)
			if err != nil {
				return err
			}
			if !v.on {
				return writePlan(s.out, p, output)
			}
			rep, err := validate.Run(cmd.Context(), sc, p, v.options(base))
			if err != nil {
				return fmt.Errorf("validate: %w", err)
			}
			if err := writePlanValidation(s.out, p, rep, output); err != nil {
				return err
			}
			if rep.Verdict == validate.VerdictFails {
				return fmt.Errorf("the plan fails validation: %s", rep.Summary)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "scenario file (YAML or JSON); - for standard input")
	cmd.Flags().StringVar(&example, "example", "", "plan a shipped example instead: "+strings.Join(planner.ExampleNames(), ", "))
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: "+strings.Join(planFormats, ", "))
	v.addFlags(cmd)
	return cmd
}

// planScenario reads, validates and plans the scenario named by -f or
// --example.
func planScenario(in io.Reader, file, example string) (scenario.Scenario, *plan.Plan, error) {
	data, err := scenarioBytes(in, file, example)
	if err != nil {
		return scenario.Scenario{}, nil, err
	}
	sc, err := scenario.Parse(data)
	if err != nil {
		return scenario.Scenario{}, nil, fmt.Errorf("invalid scenario: %w", err)
	}
	p, err := plan.Compute(sc)
	if err != nil {
		return scenario.Scenario{}, nil, fmt.Errorf("invalid scenario: %w", err)
	}
	return sc, p, nil
}

// scenarioBytes reads the scenario named by -f or --example.
func scenarioBytes(in io.Reader, file, example string) ([]byte, error) {
	switch {
	case example != "" && file != "":
		return nil, usageError{errors.New("give either -f or --example, not both")}
	case example != "":
		b, ok := planner.Example(example)
		if !ok {
			return nil, usageError{fmt.Errorf("no example named %q; there are: %s", example, strings.Join(planner.ExampleNames(), ", "))}
		}
		return b, nil
	case file == "-":
		b, err := io.ReadAll(io.LimitReader(in, maxScenarioBytes+1))
		if err != nil {
			return nil, fmt.Errorf("read scenario from standard input: %w", err)
		}
		return checkSize(b, "standard input")
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("read scenario: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxScenarioBytes+1))
		if err != nil {
			return nil, fmt.Errorf("read scenario %s: %w", file, err)
		}
		return checkSize(b, file)
	}
	return nil, usageError{errors.New("give a scenario with -f FILE (or -f - for standard input) or --example NAME")}
}

// maxScenarioBytes bounds a scenario file, as the API bounds request bodies.
const maxScenarioBytes = 4 << 20

func checkSize(b []byte, name string) ([]byte, error) {
	if len(b) > maxScenarioBytes {
		return nil, fmt.Errorf("scenario %s is larger than %d MiB", name, maxScenarioBytes>>20)
	}
	return b, nil
}

// writePlan renders a plan in one of planFormats.
func writePlan(w io.Writer, p *plan.Plan, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	case "yaml":
		b, err := yaml.Marshal(p)
		if err != nil {
			return fmt.Errorf("encode plan as YAML: %w", err)
		}
		_, err = w.Write(b)
		return err
	case "markdown":
		return report.WriteMarkdown(w, p)
	}
	return report.WriteTable(w, p)
}

func oneOf(v string, options []string) bool {
	for _, o := range options {
		if v == o {
			return true
		}
	}
	return false
}
