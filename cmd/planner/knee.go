package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/importer"
)

func newKneeCmd(s streams) *cobra.Command {
	var printAs *output
	var j judgement
	cmd := &cobra.Command{
		Use:   "knee FILE.csv",
		Short: "Find the knee of a measured concurrency ramp",
		Long: "Knee analyses a ramp CSV, one row per request: the probe's requests.csv (whose\n" +
			"closed-loop steps it measures in their steady state, as the probe does) or the\n" +
			"workshop layout with columns step, idx, ok, code, ms and wall_s (any result\n" +
			"file that planner import reads works too). It prints the step table and applies\n" +
			"the knee rule: a step passes when its goodput grew by at least --min-gain-pct\n" +
			"over the previous step and its E2E p95 stayed under --max-p95-fraction of\n" +
			"--deadline; the knee is the last step before the first that fails. A closed-loop\n" +
			"step of a probe's requests.csv with fewer than 2c + 10 measured requests, or\n" +
			"that never ran with all its slots busy, is shown but not judged; the steps of\n" +
			"the workshop layout and of other tools' files are judged as they were run.\n" +
			"It also reports knee_refined, the collapse point (goodput falling beyond its noise and\n" +
			"--collapse-tolerance-pct), whether the quota bound the ramp (the share of 429s\n" +
			"rising with concurrency), and the Universal Scalability Law fit. FILE of - is\n" +
			"standard input.",
		Example: "  planner knee probe-out/requests.csv\n  planner knee ramp.csv --deadline 30s --min-gain-pct 5 -o json --out knee.json",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := printAs.check(); err != nil {
				return err
			}
			format := printAs.format
			opts, err := j.options()
			if err != nil {
				return err
			}
			if err := outNotRead(printAs.path, args); err != nil {
				return err
			}
			f, err := readMeasurement(s.in, args[0])
			if err != nil {
				return err
			}
			if err := notStepsFile(f); err != nil {
				return fmt.Errorf("knee: %w", err)
			}
			imp, err := importer.Import(f.Name, f.Data, importer.Options{Options: opts})
			if err != nil {
				return fmt.Errorf("knee: %w", err)
			}
			return printAs.write(s, func(w io.Writer) error { return writeImport(w, imp, format) })
		},
	}
	printAs = addOutputFlags(cmd, measurementFormats...).jsonAlias(cmd)
	j.addFlags(cmd)
	return cmd
}
