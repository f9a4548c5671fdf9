package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/app"
	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/report"
)

// catalogueHelp says where the tier catalogue of a command comes from.
const catalogueHelp = "The tier catalogue is the tiers: of the configuration file of --config (or\n" +
	"PLANNER_CONFIG), the file planner serve reads; without one, the built-in\n" +
	"catalogue of configs/tiers.yaml, whose limits and prices are dated examples."

// addCatalogueFlag adds --config, the file whose tiers are the catalogue.
func addCatalogueFlag(cmd *cobra.Command) {
	cmd.Flags().String("config", "", "configuration file whose tiers: are the tier catalogue (PLANNER_CONFIG); default the built-in example tiers")
	_ = cmd.MarkFlagFilename("config", "yaml", "yml")
}

// catalogue is the command's tier catalogue (catalogueHelp).
func catalogue(cmd *cobra.Command) ([]config.Tier, error) {
	tiers, err := config.LoadTiers(cmd.Flags())
	if err != nil {
		return nil, fmt.Errorf("tier catalogue: %w", err)
	}
	return tiers, nil
}

// newApp is what a command plans, sweeps and simulates with: an engine
// without a deadline (SIGINT and SIGTERM stop it) and a slot per CPU,
// whose remedies name tiers of the command's catalogue.
func newApp(cmd *cobra.Command) (*app.App, error) {
	tiers, err := catalogue(cmd)
	if err != nil {
		return nil, err
	}
	return app.New(plan.New(plan.Options{Tiers: config.Quotas(tiers)})), nil
}

func newTiersCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tiers [--config FILE] [-o FORMAT] [--out PATH]",
		Short: "List the quota-tier catalogue",
		Long: "Tiers lists the quota-tier catalogue: each tier's limits, token accounting\n" +
			"and price, as GET /v1/tiers returns it. What-if sweeps put tiers on a quota\n" +
			"(planner what-if --tiers) and rank them by cost; remedies name the cheapest\n" +
			"tier that lifts a class.\n\n" + catalogueHelp,
		Example: "  planner tiers\n  planner tiers --config planner.yaml -o yaml",
		Args:    usageArgs(cobra.NoArgs),
	}
	addCatalogueFlag(cmd)
	out := addOutputFlags(cmd, report.TierFormats...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := out.check(); err != nil {
			return err
		}
		tiers, err := catalogue(cmd)
		if err != nil {
			return err
		}
		return out.write(s, func(w io.Writer) error { return report.WriteTiers(w, tiers, out.format) })
	}
	return cmd
}
