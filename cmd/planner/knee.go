package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/importer"
)

func newKneeCmd(s streams) *cobra.Command {
	var asJSON bool
	var j judgement
	cmd := &cobra.Command{
		Use:   "knee FILE.csv",
		Short: "Find the knee of a measured concurrency ramp",
		Long: "Knee analyses a ramp CSV, one row per request: the probe's requests.csv or\n" +
			"the workshop layout with columns step, idx, ok, code, ms and wall_s (any\n" +
			"result file that planner import reads works too). It prints the step table\n" +
			"and applies the knee rule: a step passes when its goodput grew by at least\n" +
			"--min-gain-pct over the previous step and its E2E p95 stayed under\n" +
			"--max-p95-fraction of --deadline; the knee is the last step before the first\n" +
			"that fails. It also reports the collapse point, whether 429s came at or below\n" +
			"the knee, and the Universal Scalability Law fit. FILE of - is standard input.",
		Example: "  planner knee probe-out/requests.csv\n  planner knee ramp.csv --deadline 30s --min-gain-pct 5",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := j.options()
			if err != nil {
				return err
			}
			f, err := readMeasurement(s.in, args[0])
			if err != nil {
				return err
			}
			imp, err := importer.Import(f.Name, f.Data, importer.Options{Options: opts})
			if err != nil {
				return fmt.Errorf("knee: %w", err)
			}
			if asJSON {
				return writeImportJSON(s.out, imp)
			}
			return writeImportReport(s.out, imp)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON instead of a table")
	j.addFlags(cmd)
	return cmd
}
