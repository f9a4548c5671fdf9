package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/api"
	"github.com/plannerdev/planner/internal/report"
)

func newOpenAPICmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "openapi [-o yaml|json] [--out PATH]",
		Short: "Print the API's OpenAPI 3.1 document",
		Long: "Openapi prints the OpenAPI 3.1 document of the API that planner serve answers,\n" +
			"the same one served at /openapi.yaml. openapi.yaml in the repository is its output.",
		Example: "  planner openapi --out openapi.yaml\n  planner openapi -o json",
		Args:    usageArgs(cobra.NoArgs),
	}
	out := addOutputFlags(cmd, report.FormatYAML, report.FormatJSON)
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := out.check(); err != nil {
			return err
		}
		doc := api.New(api.Options{}).OpenAPI()
		var b []byte
		var err error
		if out.format == report.FormatYAML {
			b, err = doc.YAML()
		} else {
			b, err = json.MarshalIndent(doc, "", "  ")
			b = append(b, '\n')
		}
		if err != nil {
			return fmt.Errorf("encode the OpenAPI document: %w", err)
		}
		return out.write(s, func(w io.Writer) error {
			_, err := w.Write(b)
			return err
		})
	}
	return cmd
}
