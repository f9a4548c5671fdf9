package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/internal/importer"
)

func newImportCmd(s streams) *cobra.Command {
	var output, format string
	var asJSON bool
	var j judgement
	cmd := &cobra.Command{
		Use:   "import FILE...",
		Short: "Convert benchmark results into a step table, knee and latency curve",
		Long: "Import reads the result files of vLLM bench serve, GuideLLM, AIPerf, GenAI-Perf\n" +
			"and llmperf, the probe's requests.csv and the workshop ramp CSV (step, idx, ok,\n" +
			"code, ms, wall_s), recognising the format by content. Several files of one ramp\n" +
			"(one result per concurrency, or a summary with its per-request file) merge into\n" +
			"one step table. It prints the table, the knee, collapse point, quota-limited\n" +
			"verdict, the Universal Scalability Law fit and a note for every mapping or\n" +
			"estimate made, and with -o writes the latency block to paste under latency:\n" +
			"in a scenario (-o - writes it to standard output and the report to standard\n" +
			"error). A FILE of - is standard input.\n\n" +
			"Formats: " + strings.Join(importer.Formats(), ", ") + ".",
		Example: "  planner import results/*.json -o curve.yaml\n" +
			"  planner import benchmarks.json --deadline 20s\n" +
			"  planner import artifacts/run1/profile_export_aiperf.json artifacts/run1/profile_export.jsonl --json",
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := j.options()
			if err != nil {
				return err
			}
			if !importer.KnownFormat(format) {
				return usageError{fmt.Errorf("--format must be auto or one of %s, got %q", strings.Join(importer.Formats(), ", "), format)}
			}
			if err := oneStdin(args); err != nil {
				return err
			}
			files := make([]importer.File, 0, len(args))
			for _, name := range args {
				f, err := readMeasurement(s.in, name)
				if err != nil {
					return err
				}
				files = append(files, f)
			}
			imp, err := importer.ImportMany(files, importer.Options{Options: opts, Format: format})
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			report := s.out
			if output == "-" {
				report = s.err
			}
			if asJSON {
				err = writeImportJSON(report, imp)
			} else {
				err = writeImportReport(report, imp)
			}
			if err != nil {
				return err
			}
			if output == "" {
				return nil
			}
			if asJSON {
				report = io.Discard
			}
			return writeLatencyBlock(s.out, report, output, imp, args)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the latency block (YAML) to this file; - for standard output")
	cmd.Flags().StringVar(&format, "format", "auto", "read the files as this format instead of detecting it: "+strings.Join(importer.Formats(), ", "))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON instead of a table")
	j.addFlags(cmd)
	return cmd
}

// oneStdin refuses "-" more than once: standard input can be read once.
func oneStdin(args []string) error {
	n := 0
	for _, a := range args {
		if a == "-" {
			n++
		}
	}
	if n > 1 {
		return usageError{errors.New("standard input (-) can be given once")}
	}
	return nil
}

// writeLatencyBlock writes the latency block as YAML to the file named by
// output (or to stdout for "-") and says where it went on report.
func writeLatencyBlock(stdout, report io.Writer, output string, imp *importer.Imported, args []string) error {
	if imp.Latency == nil {
		return errors.New("no latency block to write: see the notes above")
	}
	body, err := yaml.Marshal(imp.Latency)
	if err != nil {
		return fmt.Errorf("encode latency block: %w", err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Latency block measured by %s, imported by planner from:\n", imp.Format)
	for _, a := range args {
		fmt.Fprintf(&b, "#   %s\n", a)
	}
	b.WriteString("# Paste it under \"latency:\" in a scenario (or a class's latency:).\n")
	if len(imp.Latency.Curve) == 0 {
		b.WriteString("# The source has no TTFT: give ttft_ms and tpot_ms beside the knee.\n")
	}
	b.Write(body)
	if output == "-" {
		_, err := stdout.Write(b.Bytes())
		return err
	}
	if err := os.WriteFile(output, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write latency block: %w", err)
	}
	_, err = fmt.Fprintf(report, "\nlatency block (%d curve points, knee %s) written to %s\n", len(imp.Latency.Curve), intOrNone(imp.Latency.Knee), output)
	return err
}
