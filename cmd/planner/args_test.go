package main

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// scenarioCommands are the commands that read a scenario with -f, with
// the flags each needs besides.
var scenarioCommands = [][]string{
	{"plan"},
	{"report"},
	{"what-if", "--vary", "/quotas/0/tpm=1e6,2e6"},
	{"simulate", "--duration", "10m"},
	{"export", "--to", "client"},
}

// TestScenarioAsArgument gives every command that takes -f its scenario
// as its argument instead: the output is the same, and both at once, two
// files, or a file and an example are usage errors.
func TestScenarioAsArgument(t *testing.T) {
	file := filepath.Join(t.TempDir(), "support.yaml")
	if err := os.WriteFile(file, []byte(exampleText(t, "chat")), 0o644); err != nil {
		t.Fatal(err)
	}
	root := newRootCmd(streams{})
	for _, args := range scenarioCommands {
		args = append(slices.Clone(args), "-o", "json")
		code, withFlag, errOut := execute(t, "", append(slices.Clone(args), "-f", file)...)
		if code != exitOK {
			t.Fatalf("%v -f: exit %d: %s", args, code, errOut)
		}
		code, positional, errOut := execute(t, "", append(slices.Clone(args), file)...)
		if code != exitOK {
			t.Errorf("%v FILE: exit %d: %s", args, code, errOut)
			continue
		}
		if args[0] == "report" {
			// The report carries the time it was generated.
			withFlag, positional = withoutGenerated(withFlag), withoutGenerated(positional)
		}
		if positional != withFlag {
			t.Errorf("%v FILE prints other than -f FILE", args)
		}
		for _, bad := range [][]string{{file, "-f", file}, {file, file}, {file, "--example", "chat"}} {
			if code, out, errOut := execute(t, "", append(slices.Clone(args), bad...)...); code != exitUsage || out != "" {
				t.Errorf("%v %v: exit %d, %q %s; want a usage error", args, bad, code, out, errOut)
			}
		}
	}
	// Every command with -f takes the argument: none is left out of the
	// list above, and its usage line shows it.
	for _, cmd := range root.Commands() {
		if cmd.Flags().Lookup("file") == nil {
			continue
		}
		if !slices.ContainsFunc(scenarioCommands, func(a []string) bool { return a[0] == cmd.Name() }) {
			t.Errorf("planner %s takes -f but is not tested with a positional scenario", cmd.Name())
		}
		if !strings.Contains(cmd.Use, "FILE | -f FILE") {
			t.Errorf("planner %s: its usage %q does not show the positional FILE", cmd.Name(), cmd.Use)
		}
	}
	if code, _, errOut := execute(t, "", "plan"); code != exitUsage || !strings.Contains(errOut, "a file as the argument") {
		t.Errorf("plan with no scenario: exit %d, %s", code, errOut)
	}
}

// TestBareServeTakesServeFlags starts `planner --listen ... --db ...`, as
// the README says bare planner serves, and checks that the root has every
// flag of serve, and no other command has them.
func TestBareServeTakesServeFlags(t *testing.T) {
	cleanServeEnv(t)
	db := filepath.Join(t.TempDir(), "bare.db")
	r := startServe(t, "--listen", "127.0.0.1:0", "--db", db)
	if code, _ := get(t, r.url+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("--db was not used: %v", err)
	}
	r.stop()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d: %s", code, r.errOut)
	}
	root := newRootCmd(streams{})
	serve, _, _ := root.Find([]string{"serve"})
	serve.Flags().VisitAll(func(f *pflag.Flag) {
		if root.Flags().Lookup(f.Name) == nil {
			t.Errorf("planner serve takes --%s, bare planner does not", f.Name)
		}
	})
	if code, _, errOut := execute(t, "", "plan", "--listen", "127.0.0.1:0", "--example", "chat"); code != exitUsage {
		t.Errorf("plan --listen: exit %d %s; serve's flags are the root's own, not every command's", code, errOut)
	}
}

// TestUnknownCommandIsAUsageError: a command planner does not have is a
// usage error, asked for its help or not; the help of the root and of a
// command is not.
func TestUnknownCommandIsAUsageError(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"nonexist"}, exitUsage},
		{[]string{"nonexist", "--help"}, exitUsage},
		{[]string{"validate", "-h"}, exitUsage},
		{[]string{"help", "nonexist"}, exitUsage},
		{[]string{"help", "plan"}, exitOK},
		{[]string{"help"}, exitOK},
		{[]string{"--help"}, exitOK},
		{[]string{"plan", "--help"}, exitOK},
	} {
		code, _, errOut := execute(t, "", tc.args...)
		if code != tc.code || (code == exitUsage && !strings.Contains(errOut, `unknown command "`)) {
			t.Errorf("planner %s: exit %d, want %d: %s", strings.Join(tc.args, " "), code, tc.code, errOut)
		}
	}
}
