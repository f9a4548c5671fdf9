package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/app"
	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/verify"
)

func newPlanCmd(s streams) *cobra.Command {
	var file, example string
	var check bool
	var v validation
	cmd := &cobra.Command{
		Use:   "plan (FILE | -f FILE | --example NAME) [-o FORMAT] [--out PATH] [--check] [--validate --base-url URL --model M]",
		Short: "Plan per-class pools for a scenario",
		Long: "Plan reads a scenario (YAML or JSON; -f - reads standard input) and prints,\n" +
			"for every class, its pool, the constraint that binds it, the smallest pool its\n" +
			"demand needs, predictions, every ceiling with how it was derived, client\n" +
			"settings, and remedies when it does not fit.\n\n" +
			"With --validate it then checks the plan against the endpoint: for each class a\n" +
			"short closed-loop probe at its pool and at ceil(1.25 × pool), with prompts of the\n" +
			"class's input p50 and (ignore_eos) outputs of its mean length, compared with the\n" +
			"model's throughput, TTFT p95 and E2E p95 at the same concurrencies; verdict ok,\n" +
			"degraded or fails (exit status 1 when it fails).\n\n" +
			"Every plan is checked by its own short seeded simulation: a class fits only when\n" +
			"the queueing model and the simulation both hold (docs/concepts.md, \"The check\").\n" +
			"With --check the exit status is 3 when any class does not fit by either, after the\n" +
			"plan is printed: a CI job can gate a change of quotas, demand or SLOs on it.\n\n" +
			"With prices on the quotas the plan says what each class, key and the whole\n" +
			"plan cost, and a remedy that raises a limit names the cheapest tier of the\n" +
			"catalogue in which the class fits and what the change costs a day. " + catalogueHelp + "\n\n" +
			"Examples shipped with planner: " + strings.Join(planner.ExampleNames(), ", ") + ".",
		Example: "  planner plan --example chat\n  planner plan scenario.yaml\n  planner plan -f scenario.yaml -o json --out plan.json\n" +
			"  planner plan -f scenario.yaml --validate --base-url http://127.0.0.1:8000/v1 --model my-model",
	}
	addScenarioFlags(cmd, &file, &example, "plan")
	addCatalogueFlag(cmd)
	out := addOutputFlags(cmd, report.PlanFormats...)
	cmd.Flags().BoolVar(&check, "check", false, "exit with status 3 when any class does not fit, by the queueing model or by its own simulation")
	v.addFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := out.check(); err != nil {
			return err
		}
		base, err := v.config(cmd)
		if err != nil {
			return err
		}
		a, err := newApp(cmd)
		if err != nil {
			return err
		}
		sc, p, err := planScenario(cmd.Context(), a, s.in, file, example)
		if err != nil {
			return err
		}
		if !v.on {
			if err := out.write(s, func(w io.Writer) error { return report.WritePlan(w, p, out.format) }); err != nil {
				return err
			}
			return checkFits(check, p)
		}
		rep, err := verify.Run(cmd.Context(), sc, p, v.options(base))
		if err != nil {
			return validationError(err)
		}
		if err := out.write(s, func(w io.Writer) error { return writePlanValidation(w, p, rep, out.format) }); err != nil {
			return err
		}
		if rep.Verdict == verify.VerdictFails {
			return fmt.Errorf("the plan fails validation: %s", rep.Summary)
		}
		return checkFits(check, p)
	}
	return cmd
}

// validationError is a validation's failure to start: the problems that
// the plan brings to its settings (a --requests-per-step too small for a
// pool) named by their flags, a usage error when every one is a flag's;
// a class's own problem (its prompt beyond what a probe sends) is not.
func validationError(err error) error {
	var errs fieldpath.Errors
	if !errors.As(err, &errs) {
		return fmt.Errorf("validate: %w", err)
	}
	renamed := validateFlags.Rename(errs)
	for _, e := range renamed {
		if !strings.HasPrefix(e.Path, "--") {
			return fmt.Errorf("validate: %w", renamed)
		}
	}
	return usageError{renamed}
}

// checkFits is the outcome of --check: notFitting when a class does not fit.
func checkFits(check bool, p *plan.Plan) error {
	if !check {
		return nil
	}
	var unfit []string
	for _, c := range p.Classes {
		if !c.Fitting() {
			unfit = append(unfit, c.Name)
		}
	}
	if len(unfit) > 0 {
		return notFitting{unfit}
	}
	return nil
}

// readScenario reads and validates the scenario named by -f or --example.
func readScenario(in io.Reader, file, example string) (scenario.Scenario, error) {
	data, err := scenarioBytes(in, file, example)
	if err != nil {
		return scenario.Scenario{}, err
	}
	sc, err := scenario.Parse(data)
	if err != nil {
		return scenario.Scenario{}, fmt.Errorf("invalid scenario: %w", err)
	}
	return sc, nil
}

// planScenario reads, validates and plans the scenario named by -f or
// --example.
func planScenario(ctx context.Context, a *app.App, in io.Reader, file, example string) (scenario.Scenario, *plan.Plan, error) {
	sc, err := readScenario(in, file, example)
	if err != nil {
		return scenario.Scenario{}, nil, err
	}
	p, err := a.Plan(ctx, sc)
	if err != nil {
		return scenario.Scenario{}, nil, planError(err)
	}
	return sc, p, nil
}

// planError says why no plan was made: a scenario that breaks a rule is
// invalid, with every problem at its path.
func planError(err error) error {
	var errs scenario.Errors
	if errors.As(err, &errs) {
		return fmt.Errorf("invalid scenario: %w", err)
	}
	return fmt.Errorf("plan: %w", err)
}

// scenarioBytes reads the scenario named by -f or --example.
func scenarioBytes(in io.Reader, file, example string) ([]byte, error) {
	switch {
	case example != "" && file != "":
		return nil, usageError{errors.New("give either a scenario file or --example, not both")}
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
	return nil, usageError{errors.New("give a scenario: a file as the argument or with -f FILE (- for standard input), or --example NAME")}
}

// maxScenarioBytes bounds a scenario file, as the API bounds request bodies.
const maxScenarioBytes = 4 << 20

// checkSize refuses a scenario beyond maxScenarioBytes, and one with
// nothing in it (an empty file, or standard input with nothing piped in).
func checkSize(b []byte, name string) ([]byte, error) {
	if len(b) > maxScenarioBytes {
		return nil, fmt.Errorf("scenario %s is larger than %d MiB", name, maxScenarioBytes>>20)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("scenario %s is empty: a scenario has quotas, latency and classes (docs/scenario.md)", name)
	}
	return b, nil
}
