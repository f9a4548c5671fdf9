package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner"
)

// TestOutputConvention checks the flags every command shares: -o/--output
// with json among its formats, and --out naming a file.
func TestOutputConvention(t *testing.T) {
	root := newRootCmd(streams{})
	for _, name := range []string{"", "plan", "report", "what-if", "simulate", "export", "knee", "compare", "tiers", "sim", "openapi", "version", "serve"} {
		cmd := root
		if name != "" {
			var err error
			if cmd, _, err = root.Find([]string{name}); err != nil {
				t.Fatal(err)
			}
		}
		o := cmd.Flags().Lookup("output")
		if o == nil || o.Shorthand != "o" || !strings.Contains(o.Usage, "json") {
			t.Errorf("planner %s: -o/--output is %+v, want a format that may be json", name, o)
		}
		if cmd.Flags().Lookup("out") == nil {
			t.Errorf("planner %s: no --out", name)
		}
	}
}

// TestOutToFile writes each command's JSON to a file with --out: nothing
// goes to standard output, and the file is what standard output would
// have had.
func TestOutToFile(t *testing.T) {
	for _, args := range [][]string{
		{"plan", "--example", "chat", "-o", "json"},
		{"what-if", "--example", "chat", "--vary", "/quotas/0/tpm=1e6,2e6", "-o", "json"},
		{"report", "--example", "chat", "-o", "json"},
		{"knee", "../../internal/importer/testdata/handmade/workshop_ramp.csv", "-o", "json"},
		{"openapi", "-o", "json"},
		{"version", "-o", "json"},
		{"--version", "-o", "json"},
	} {
		file := filepath.Join(t.TempDir(), "out.json")
		code, out, errOut := execute(t, "", append(args, "--out", file)...)
		if code != exitOK || out != "" {
			t.Errorf("%v: exit %d, stdout %q: %s", args, code, out, errOut)
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil || !json.Valid(b) {
			t.Errorf("%v: the file is not JSON (%v): %.200s", args, err, b)
			continue
		}
		if args[0] == "report" {
			continue // it carries the time it was generated
		}
		if _, direct, _ := execute(t, "", args...); direct != string(b) {
			t.Errorf("%v: the file differs from standard output", args)
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, errOut := execute(t, "", "version")
	if code != exitOK || !strings.HasPrefix(out, "planner ") {
		t.Fatalf("exit %d: %q %s", code, out, errOut)
	}
	if _, flag, _ := execute(t, "", "--version"); flag != out {
		t.Errorf("planner --version printed %q, planner version %q", flag, out)
	}
	_, js, _ := execute(t, "", "version", "-o", "json")
	var got buildInfo
	if err := json.Unmarshal([]byte(js), &got); err != nil || got != readBuildInfo() || got.GoVersion == "" {
		t.Errorf("version -o json: %v %+v", err, got)
	}
}

// TestBuiltBinaryPrintsItsRevision builds the command as the README says
// (go build -buildvcs=true) from this checkout and checks that its version
// names the checkout's commit. Outside a git checkout there is no revision
// to record, and the test is skipped.
func TestBuiltBinaryPrintsItsRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "planner")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("planner version: %v", err)
	}
	var got buildInfo
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(head)); got.Revision != want || got.Time == "" {
		t.Fatalf("planner version printed revision %q at %q, the checkout is at %s", got.Revision, got.Time, want)
	}
}

// TestBuildInfo reads the revision and time that go build records from a
// checkout.
func TestBuildInfo(t *testing.T) {
	bi, err := debug.ParseBuildInfo("path\tgithub.com/plannerdev/planner/cmd/planner\n" +
		"mod\tgithub.com/plannerdev/planner\tv0.0.0-20261201025721-08b5f8133ce6+dirty\t\n" +
		"build\tvcs=git\n" +
		"build\tvcs.revision=08b5f8133ce647bca114943ef210da68b3bde01a\n" +
		"build\tvcs.time=2026-12-01T02:57:21Z\n" +
		"build\tvcs.modified=true\n")
	if err != nil {
		t.Fatal(err)
	}
	bi.GoVersion = "go1.26.0" // the runtime's, not parsed
	got := fromBuildInfo(bi)
	want := buildInfo{Version: "v0.0.0-20261201025721-08b5f8133ce6+dirty", Revision: "08b5f8133ce647bca114943ef210da68b3bde01a",
		Time: "2026-12-01T02:57:21Z", Modified: true, GoVersion: "go1.26.0"}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	const line = "v0.0.0-20261201025721-08b5f8133ce6+dirty (revision 08b5f8133ce647bca114943ef210da68b3bde01a, 2026-12-01T02:57:21Z, with local changes, go1.26.0)"
	if got.String() != line {
		t.Errorf("line %q, want %q", got.String(), line)
	}
	if s := (buildInfo{Version: "(devel)", GoVersion: "go1.26.0"}).String(); s != "(devel) (no VCS revision recorded in this build, go1.26.0)" {
		t.Errorf("without VCS: %q", s)
	}
}

// TestCompletion asks the shell-completion entry point what it offers for
// --example and -o.
func TestCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "plan", "--example", ""}, planner.ExampleNames()},
		{[]string{"__complete", "what-if", "--example", ""}, planner.ExampleNames()},
		{[]string{"__complete", "plan", "-o", ""}, []string{"table", "json", "yaml", "markdown", "csv"}},
		{[]string{"__complete", "report", "--output", ""}, []string{"markdown", "html", "json", "yaml"}},
		{[]string{"__complete", "openapi", "-o", ""}, []string{"yaml", "json"}},
	} {
		code, out, errOut := execute(t, "", tc.args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != exitOK || len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], ":") {
			t.Errorf("%v: exit %d: %q %s", tc.args, code, out, errOut)
			continue
		}
		if got := lines[:len(lines)-1]; !slices.Equal(got, tc.want) {
			t.Errorf("%v offers %q, want %q", tc.args, got, tc.want)
		}
	}
	if code, out, _ := execute(t, "", "completion", "bash"); code != exitOK || !strings.Contains(out, "__start_planner") {
		t.Errorf("completion bash: exit %d", code)
	}
	for _, args := range [][]string{{"completion", "tcsh"}, {"completion"}} {
		if code, out, errOut := execute(t, "", args...); code != exitUsage || out != "" {
			t.Errorf("%v: exit %d, printed %q %q; want the usage error's status and nothing on stdout", args, code, out, errOut)
		}
	}
}

// TestJSONAlias: the hidden --json of knee and import, from before
// -o/--output, prints what -o json prints.
func TestJSONAlias(t *testing.T) {
	for _, cmd := range []string{"knee", "import"} {
		code, alias, errOut := execute(t, "", cmd, workshopRamp, "--json")
		if code != exitOK || !json.Valid([]byte(alias)) {
			t.Errorf("%s --json: exit %d, %.200s %s", cmd, code, alias, errOut)
			continue
		}
		if _, direct, _ := execute(t, "", cmd, workshopRamp, "-o", "json"); direct != alias {
			t.Errorf("%s --json differs from -o json", cmd)
		}
	}
}
