package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

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
}

// addOutputFlags adds -o/--output (one of formats, the first by default)
// and --out to cmd, with shell completion of the formats.
func addOutputFlags(cmd *cobra.Command, formats ...string) *output {
	o := &output{formats: formats}
	cmd.Flags().StringVarP(&o.format, "output", "o", formats[0], "output format: "+strings.Join(formats, ", "))
	cmd.Flags().StringVar(&o.path, "out", "", "write the output to this file instead of standard output")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	return o
}

// check refuses a format the command does not write.
func (o *output) check() error {
	if err := report.CheckFormat(o.format, o.formats); err != nil {
		return usageError{fmt.Errorf("-o/--output: %w", err)}
	}
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
