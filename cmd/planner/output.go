package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/report"
)

// output holds a command's -o/--output FORMAT and --out PATH, the
// convention of every planner command: the format of what it prints, and
// a file to write it to instead of standard output.
type output struct {
	format  string
	path    string
	formats []string
	json    bool // the deprecated --json, an alias of -o json
}

// addOutputFlags adds -o/--output (one of formats, the first by default)
// and --out to cmd.
func addOutputFlags(cmd *cobra.Command, formats ...string) *output {
	o := addFormatFlag(cmd, formats...)
	cmd.Flags().StringVar(&o.path, "out", "", "write the output to this file instead of standard output")
	return o
}

// addFormatFlag adds -o/--output alone, with shell completion of the
// formats, for commands whose --out names what they write besides what
// they print (a probe's directory, an import's curve file).
func addFormatFlag(cmd *cobra.Command, formats ...string) *output {
	o := &output{formats: formats}
	cmd.Flags().StringVarP(&o.format, "output", "o", formats[0], "output format: "+report.DescribeFormats(formats))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	return o
}

// jsonAlias adds the old --json of a command that had it, hidden, as an
// alias of -o json.
func (o *output) jsonAlias(cmd *cobra.Command) *output {
	cmd.Flags().BoolVar(&o.json, "json", false, "same as -o json")
	_ = cmd.Flags().MarkHidden("json")
	return o
}

// check refuses a format the command does not write, saying where a file
// name goes (-o used to take one), and puts the format an alias names
// (md: markdown) in its place.
func (o *output) check() error {
	if o.json {
		o.format = report.FormatJSON
	}
	format, err := report.ParseFormat(o.format, o.formats)
	if err != nil {
		return usageError{fmt.Errorf("-o/--output: %w (a file to write goes in --out)", err)}
	}
	o.format = format
	return nil
}

// write renders with fn to standard output, or to --out: rendered whole
// first, so that a failure leaves no partial file.
func (o *output) write(s streams, fn func(w io.Writer) error) error {
	if o.path == "" {
		return fn(s.out)
	}
	var buf bytes.Buffer
	if err := fn(&buf); err != nil {
		return err
	}
	if err := os.WriteFile(o.path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", o.path, err)
	}
	return nil
}
