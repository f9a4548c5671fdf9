package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/scenario"
)

func newWhatIfCmd(s streams) *cobra.Command {
	var file, example string
	var vary []string
	var check bool
	cmd := &cobra.Command{
		Use:   "what-if (-f FILE | --example NAME) --vary PATH=V1,V2,... [--vary ...] [--check] [-o FORMAT] [--out PATH]",
		Short: "Compare plans over varied fields of a scenario",
		Long: "What-if plans every combination of one or two variations of a scenario and\n" +
			"prints the grid that POST /v1/what-if returns: for each combination, every\n" +
			"class's pool, binding constraint, min_pool and whether it fits. A variation is\n" +
			"a JSON Pointer (RFC 6901) into the scenario and the values to put there,\n" +
			"separated by commas: numbers, true or false, words, or JSON values such as\n" +
			"{\"rps\": 2}. A value that makes the scenario invalid marks only its cell. At\n" +
			"most " + strconv.Itoa(plan.MaxWhatIfCells) + " cells. With --check every cell's plan is also checked by its own\n" +
			"short simulation, as planner plan checks a plan, and each class says whether it fits.",
		Example: "  planner what-if --example chat --vary /quotas/0/tpm=500000,1000000,2000000\n" +
			"  planner what-if -f scenario.yaml --vary /quotas/0/tpm=1e6,2e6 --vary /classes/0/max_tokens=400,800 -o json",
		Args: usageArgs(cobra.NoArgs),
	}
	addScenarioFlags(cmd, &file, &example, "vary")
	cmd.Flags().StringArrayVar(&vary, "vary", nil, "PATH=V1,V2,...: a JSON Pointer into the scenario and its values; once or twice")
	cmd.Flags().BoolVar(&check, "check", false, "check every cell's plan by its own simulation (a simulation a cell)")
	out := addOutputFlags(cmd, report.PlanFormats...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := out.check(); err != nil {
			return err
		}
		vars, err := parseVariations(vary)
		if err != nil {
			return err
		}
		sc, err := readScenario(s.in, file, example)
		if err != nil {
			return err
		}
		grid, err := newApp().WhatIf(cmd.Context(), sc, vars, check)
		if err != nil {
			return variationError(err, vary)
		}
		return out.write(s, func(w io.Writer) error { return report.WriteWhatIf(w, grid, out.format) })
	}
	return cmd
}

// parseVariations reads the --vary flags: PATH=V1,V2,... each.
func parseVariations(vary []string) ([]plan.Variation, error) {
	if len(vary) == 0 || len(vary) > 2 {
		return nil, usageError{fmt.Errorf("give --vary PATH=V1,V2,... once or twice, got %d", len(vary))}
	}
	vars := make([]plan.Variation, len(vary))
	for i, arg := range vary {
		path, list, ok := strings.Cut(arg, "=")
		if !ok || list == "" {
			return nil, usageError{fmt.Errorf("--vary %q: want PATH=V1,V2,... with PATH a JSON Pointer such as /quotas/0/tpm", arg)}
		}
		if _, err := scenario.ParsePointer(path); err != nil {
			return nil, usageError{fmt.Errorf("--vary %q: %w", arg, err)}
		}
		vars[i] = plan.Variation{Path: path, Values: parseValues(list)}
	}
	return vars, nil
}

// parseValues reads V1,V2,...: as a JSON array when the list is one, so
// that values may be JSON objects; otherwise each value as JSON, or as a
// word when it is not JSON.
func parseValues(list string) []any {
	var values []any
	if json.Unmarshal([]byte("["+list+"]"), &values) == nil {
		return values
	}
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		var x any
		if json.Unmarshal([]byte(v), &x) != nil {
			x = v
		}
		values = append(values, x)
	}
	return values
}

// variationAt locates a problem at the i-th variation.
var variationAt = regexp.MustCompile(`^variations\[(\d+)\]`)

// variationError names the --vary flag a sweep's problem is about, as a
// usage error; other errors pass through.
func variationError(err error, vary []string) error {
	var errs scenario.Errors
	if !errors.As(err, &errs) {
		return err
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		where := "--vary"
		if m := variationAt.FindStringSubmatch(e.Path); m != nil {
			if n, _ := strconv.Atoi(m[1]); n < len(vary) {
				where = fmt.Sprintf("--vary %q", vary[n])
			}
		}
		msgs[i] = where + ": " + e.Message
	}
	return usageError{errors.New(strings.Join(msgs, "; "))}
}
