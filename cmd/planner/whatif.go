package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/scenario"
)

func newWhatIfCmd(s streams) *cobra.Command {
	var file, example, tierPath string
	var vary, tiers []string
	var check bool
	cmd := &cobra.Command{
		Use:   "what-if (FILE | -f FILE | --example NAME) (--vary PATH=V1,V2,... | --tiers T1,T2,... --path /quotas/N) [--vary ...] [--check] [-o FORMAT] [--out PATH]",
		Short: "Compare plans over varied fields of a scenario, or over quota tiers",
		Long: "What-if plans every combination of one or two variations of a scenario and\n" +
			"prints the grid that POST /v1/what-if returns: for each combination, every\n" +
			"class's pool, binding constraint, min_pool and whether it fits, and what the\n" +
			"plan costs a day when its keys have prices. A variation is a JSON Pointer\n" +
			"(RFC 6901) into the scenario and the values to put there, separated by commas:\n" +
			"numbers, true or false, words, or JSON values such as {\"rps\": 2}; or, with\n" +
			"--tiers and --path, catalogue tiers put on the quota at the path (their limits,\n" +
			"token accounting and price). A sweep over tiers alone ranks them by what the\n" +
			"plan costs a day with each, names the cheapest in which every class fits, and\n" +
			"says above which demand provisioned capacity is cheaper than pay as you go.\n" +
			"A value that makes the scenario invalid marks only its cell; when no cell is\n" +
			"valid, the grid is printed and the exit status is 1. A path that names no field\n" +
			"of the scenario is a usage error (exit status 2). At most " + strconv.Itoa(plan.MaxWhatIfCells) + " cells, and\n" +
			strconv.Itoa(plan.MaxVariationValues) + " values a variation.\n" +
			"With --check every cell's plan is also checked by its own short simulation, as\n" +
			"planner plan checks a plan, and each class says whether it fits; a sweep over\n" +
			"tiers alone is always checked, since a tier is ranked by whether every class\n" +
			"fits in it.\n\n" +
			catalogueHelp,
		Example: "  planner what-if --example chat --vary /quotas/0/tpm=500000,1000000,2000000\n" +
			"  planner what-if -f scenario.yaml --vary /quotas/0/tpm=1e6,2e6 --vary /classes/0/max_tokens=400,800 -o json\n" +
			"  planner what-if --example priced --tiers example-medium,example-provisioned --path /quotas/1",
	}
	addScenarioFlags(cmd, &file, &example, "vary")
	cmd.Flags().StringArrayVar(&vary, "vary", nil, "PATH=V1,V2,...: a JSON Pointer into the scenario and its values; once or twice")
	cmd.Flags().StringSliceVar(&tiers, "tiers", nil, "T1,T2,...: catalogue tiers to put on the quota at --path (planner tiers lists them)")
	cmd.Flags().StringVar(&tierPath, "path", "", "the quota the tiers go on, /quotas/N")
	addCatalogueFlag(cmd)
	cmd.Flags().BoolVar(&check, "check", false, "check every cell's plan by its own simulation (a simulation a cell)")
	out := addOutputFlags(cmd, report.PlanFormats...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := out.check(); err != nil {
			return err
		}
		if (len(tiers) == 0) != (tierPath == "") {
			return usageError{errors.New("give --tiers T1,T2,... and --path /quotas/N together")}
		}
		given := len(vary)
		if len(tiers) > 0 {
			given++
		}
		if given == 0 || given > 2 {
			return usageError{fmt.Errorf("give --vary PATH=V1,V2,... once or twice, or --tiers T1,T2,... --path /quotas/N with at most one --vary: got %d variations", given)}
		}
		var vars []plan.Variation
		if len(vary) > 0 {
			var err error
			if vars, err = parseVariations(vary); err != nil {
				return err
			}
		}
		sc, err := readScenario(s.in, file, example)
		if err != nil {
			return err
		}
		a, err := newApp(cmd)
		if err != nil {
			return err
		}
		if len(tiers) > 0 {
			cat, err := catalogue(cmd)
			if err != nil {
				return err
			}
			v, errs := plan.TierVariation(sc, tierPath, tiers, config.Quotas(cat))
			if len(errs) > 0 {
				return tierVariationError(errs, tiers)
			}
			vars = append([]plan.Variation{v}, vars...)
		}
		var flags []string
		if len(tiers) > 0 {
			flags = append(flags, "--tiers "+strings.Join(tiers, ","))
		}
		for _, v := range vary {
			flags = append(flags, fmt.Sprintf("--vary %q", v))
		}
		grid, err := a.WhatIf(cmd.Context(), sc, vars, check)
		if err != nil {
			return variationError(err, flags)
		}
		if err := out.write(s, func(w io.Writer) error { return report.WriteWhatIf(w, grid, out.format) }); err != nil {
			return err
		}
		return noValidCell(grid)
	}
	return cmd
}

// tierVariationError names the flag a tier variation's problem is about,
// as a usage error.
func tierVariationError(errs scenario.Errors, tiers []string) error {
	var msgs []string
	for _, e := range errs {
		where := "--path"
		if e.Path != "path" {
			where = "--tiers"
			var j int
			if _, err := fmt.Sscanf(e.Path, "tiers[%d]", &j); err == nil && j < len(tiers) && tiers[j] != "" {
				where = fmt.Sprintf("--tiers %s", tiers[j])
			}
			e.Message += "; planner tiers lists the catalogue"
		}
		if m := where + ": " + e.Message; !slices.Contains(msgs, m) { // once for a name given twice
			msgs = append(msgs, m)
		}
	}
	return usageError{errors.New(strings.Join(msgs, "; "))}
}

// noValidCell is the outcome of a grid in which every cell's values make
// the scenario invalid: nothing was planned, and the exit status says so.
func noValidCell(g *plan.WhatIf) error {
	for _, c := range g.Cells {
		if len(c.Errors) == 0 {
			return nil
		}
	}
	first := ""
	if len(g.Cells) > 0 && len(g.Cells[0].Errors) > 0 {
		first = " (the first: " + g.Cells[0].Errors[0].Error() + ")"
	}
	return fmt.Errorf("no cell of the grid is valid: the values of all %d cells make the scenario invalid%s", len(g.Cells), first)
}

// parseVariations reads the --vary flags: PATH=V1,V2,... each.
func parseVariations(vary []string) ([]plan.Variation, error) {
	vars := make([]plan.Variation, len(vary))
	for i, arg := range vary {
		path, list, ok := strings.Cut(arg, "=")
		if !ok || list == "" {
			return nil, usageError{fmt.Errorf("--vary %q: want PATH=V1,V2,... with PATH a JSON Pointer such as /quotas/0/tpm", arg)}
		}
		if _, err := scenario.ParsePointer(path); err != nil {
			return nil, usageError{fmt.Errorf("--vary %q: %w", arg, err)}
		}
		values, err := parseValues(list)
		if err != nil {
			return nil, usageError{fmt.Errorf("--vary %q: %w", arg, err)}
		}
		vars[i] = plan.Variation{Path: path, Values: values}
	}
	return vars, nil
}

// parseValues reads V1,V2,...: as a JSON array when the list is one, so
// that values may be JSON objects; otherwise each value as JSON, or as a
// word when it is not JSON. A number beyond the range of a float64
// (1e400), which JSON's syntax allows, is refused: decoded, it would be
// null.
func parseValues(list string) ([]any, error) {
	if arr := []byte("[" + list + "]"); json.Valid(arr) {
		var values []any
		err := json.Unmarshal(arr, &values)
		return values, beyondANumber(err)
	}
	var values []any
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		var x any = v
		if json.Valid([]byte(v)) {
			if err := json.Unmarshal([]byte(v), &x); err != nil {
				return nil, beyondANumber(err)
			}
		}
		values = append(values, x)
	}
	return values, nil
}

// beyondANumber words the one error that decoding valid JSON gives: a
// number that no float64 holds.
func beyondANumber(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && strings.HasPrefix(te.Value, "number ") {
		return fmt.Errorf("%s is beyond the range of a number (about ±1.8e308)", strings.TrimPrefix(te.Value, "number "))
	}
	return err
}

// variationAt locates a problem at the i-th variation.
var variationAt = regexp.MustCompile(`^variations\[(\d+)\]`)

// variationError names the flag a sweep's problem is about (flags: each
// variation's, in order), as a usage error; other errors pass through.
func variationError(err error, flags []string) error {
	var errs scenario.Errors
	if !errors.As(err, &errs) {
		return err
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		where := "--vary"
		if m := variationAt.FindStringSubmatch(e.Path); m != nil {
			if n, _ := strconv.Atoi(m[1]); n < len(flags) {
				where = flags[n]
			}
		}
		msgs[i] = where + ": " + e.Message
	}
	return usageError{errors.New(strings.Join(msgs, "; "))}
}
