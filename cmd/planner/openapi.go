package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/api"
)

func newOpenAPICmd(s streams) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "openapi",
		Short: "Print the API's OpenAPI 3.1 document",
		Long: "Openapi prints the OpenAPI 3.1 document of the API that planner serve answers,\n" +
			"the same one served at /openapi.yaml. openapi.yaml in the repository is its output.",
		Example: "  planner openapi > openapi.yaml\n  planner openapi --format json",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			doc := api.New(api.Options{}).OpenAPI()
			var b []byte
			var err error
			switch format {
			case "yaml":
				b, err = doc.YAML()
			case "json":
				b, err = json.MarshalIndent(doc, "", "  ")
				b = append(b, '\n')
			default:
				return usageError{fmt.Errorf("--format must be yaml or json, got %q", format)}
			}
			if err != nil {
				return fmt.Errorf("encode the OpenAPI document: %w", err)
			}
			_, err = s.out.Write(b)
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", "yaml", "output format: yaml or json")
	return cmd
}
