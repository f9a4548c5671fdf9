package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/report"
)

// buildInfo is what the Go toolchain recorded about this binary: the
// module's version, and the VCS revision and commit time when it was built
// from a checkout (go build stamps them; go run and -buildvcs=false do not).
type buildInfo struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
}

// readBuildInfo reads the binary's build information.
func readBuildInfo() buildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return buildInfo{Version: "unknown"}
	}
	return fromBuildInfo(bi)
}

// fromBuildInfo picks the version, revision and time out of bi.
func fromBuildInfo(bi *debug.BuildInfo) buildInfo {
	info := buildInfo{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the one-line form: version, revision and time.
func (b buildInfo) String() string {
	var parts []string
	if b.Revision != "" {
		parts = append(parts, "revision "+b.Revision)
		if b.Time != "" {
			parts = append(parts, b.Time)
		}
		if b.Modified {
			parts = append(parts, "with local changes")
		}
	} else {
		parts = append(parts, "no VCS revision recorded in this build")
	}
	if b.GoVersion != "" {
		parts = append(parts, b.GoVersion)
	}
	return b.Version + " (" + strings.Join(parts, ", ") + ")"
}

func newVersionCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version [-o text|json]",
		Short: "Print the version, VCS revision and time of this build",
		Long: "Version prints the module version of this binary and, when it was built with\n" +
			"go build from a checkout, the VCS revision and commit time recorded in it;\n" +
			"planner --version prints the same line.",
		Example: "  planner version\n  planner version -o json",
		Args:    usageArgs(cobra.NoArgs),
	}
	out := addOutputFlags(cmd, startFormats...)
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := out.check(); err != nil {
			return err
		}
		return writeVersion(s, out)
	}
	return cmd
}

// writeVersion prints the build's version in o's format.
func writeVersion(s streams, o *output) error {
	info := readBuildInfo()
	return o.write(s, func(w io.Writer) error {
		if o.format == report.FormatJSON {
			return report.WriteData(w, info, o.format)
		}
		_, err := fmt.Fprintf(w, "planner %s\n", info)
		return err
	})
}
