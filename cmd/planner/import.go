package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/importer"
)

func newImportCmd(s streams) *cobra.Command {
	var out, format string
	var printAs *output
	var allowMixed bool
	var j judgement
	cmd := &cobra.Command{
		Use:   "import FILE...",
		Short: "Convert benchmark results into a step table, knee and latency curve",
		Long: "Import reads the result files of vLLM bench serve, GuideLLM, AIPerf, GenAI-Perf\n" +
			"and llmperf, the probe's requests.csv and the workshop ramp CSV (step, idx, ok,\n" +
			"code, ms, wall_s), recognising the format by content. Several files of one\n" +
			"deployment (one result per load level, or a summary with its per-request file)\n" +
			"merge into one step table; files of different models, endpoints or tool\n" +
			"settings, two runs at the same load, or a summary whose counts and times do not\n" +
			"match its records are refused with the difference named (--allow-mixed imports\n" +
			"them anyway, with a warning). It prints the table, with estimated values\n" +
			"marked, the knee, collapse point, quota-limited verdict, the Universal\n" +
			"Scalability Law fit and a note for every mapping or estimate made; -o json or\n" +
			"-o yaml prints the same as a document. --out FILE writes the curve file, the\n" +
			"shape planner probe writes as curve.yaml: a scenario fragment whose only key is\n" +
			"latency, to append to a scenario without one (--out - writes it to standard\n" +
			"output and the report to standard error). A FILE of - is standard input.\n\n" +
			"Formats: " + strings.Join(importer.Formats(), ", ") + ".",
		Example: "  planner import results/*.json --out curve.yaml\n" +
			"  cat scenario.yaml curve.yaml > planned.yaml && planner plan -f planned.yaml\n" +
			"  planner import benchmarks.json --deadline 20s\n" +
			"  planner import artifacts/run1/profile_export_aiperf.json artifacts/run1/profile_export.jsonl -o json",
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := printAs.check(); err != nil {
				return err
			}
			outFormat := printAs.format
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
			if err := outNotRead(out, args); err != nil {
				return err
			}
			files := make([]importer.File, 0, len(args))
			for _, name := range args {
				f, err := readMeasurement(s.in, name)
				if err != nil {
					return err
				}
				if err := notStepsFile(f); err != nil {
					return fmt.Errorf("import: %w", err)
				}
				files = append(files, f)
			}
			imp, err := importer.ImportMany(files, importer.Options{Options: opts, Format: format, AllowMixed: allowMixed})
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			report := s.out
			if out == "-" {
				report = s.err
			}
			if err := writeImport(report, imp, outFormat); err != nil {
				return err
			}
			if out == "" {
				return nil
			}
			if outFormat != "table" {
				report = io.Discard
			}
			return writeCurveFile(s.out, report, out, imp, args)
		},
	}
	printAs = addFormatFlag(cmd, measurementFormats...).jsonAlias(cmd)
	cmd.Flags().StringVar(&out, "out", "", "write the curve file (a scenario fragment: latency with the curve and the knee) to this file; - for standard output")
	cmd.Flags().StringVar(&format, "format", "auto", "read the files as this format instead of detecting it: "+strings.Join(importer.Formats(), ", "))
	cmd.Flags().BoolVar(&allowMixed, "allow-mixed", false, "combine files that do not describe one deployment anyway, with a warning")
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

// writeCurveFile writes the curve file (analysis.CurveFile) to the file
// named by out (or to stdout for "-") and says where it went on report.
func writeCurveFile(stdout, report io.Writer, out string, imp *importer.Imported, args []string) error {
	if imp.Latency == nil {
		return errors.New("no latency block to write: see the notes above")
	}
	head := []string{curveHeadline(imp)}
	for _, a := range args {
		head = append(head, "  "+a)
	}
	if len(imp.Latency.Curve) == 0 {
		head = append(head, "The source has no TTFT: give ttft_ms and tpot_ms beside the knee.")
	}
	body, err := analysis.CurveFile(*imp.Latency, imp.Steps, head)
	if err != nil {
		return err
	}
	if out == "-" {
		_, err := stdout.Write(body)
		return err
	}
	if err := os.WriteFile(out, body, 0o644); err != nil {
		return fmt.Errorf("write the curve file: %w", err)
	}
	_, err = fmt.Fprintf(report, "\ncurve file (%d curve points, knee %s) written to %s\n", len(imp.Latency.Curve), intOrNone(imp.Latency.Knee), out)
	return err
}

// curveHeadline is the first comment line of an imported curve file: the
// tools that measured the run, as its files name them, and the formats
// they were read as ("Measured by guidellm (read as guidellm-benchmarks)
// and imported by planner from:").
func curveHeadline(imp *importer.Imported) string {
	var tools []string
	for _, src := range imp.Sources {
		if src.Tool != "" && !slices.Contains(tools, src.Tool) {
			tools = append(tools, src.Tool)
		}
	}
	formats := strings.ReplaceAll(imp.Format, "+", ", ")
	if len(tools) == 0 {
		return fmt.Sprintf("Read as %s and imported by planner from:", formats)
	}
	return fmt.Sprintf("Measured by %s (read as %s) and imported by planner from:", strings.Join(tools, " and "), formats)
}

// intOrNone prints a concurrency or "none".
func intOrNone(p *int) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
