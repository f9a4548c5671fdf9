package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestTypeScriptClient generates a TypeScript client from openapi.yaml
// with openapi-typescript and its defaults, compiles
// clients/typescript/client.ts against it with tsc, and runs it with
// node against planner serve on a loopback port: a plan, a what-if grid
// and a simulation of a scenario that leaves out every field the service
// defaults. It needs node and the packages of clients/typescript/package.json:
// .ci/run installs their pinned versions into a temporary folder and names
// its node_modules in PLANNER_TS_MODULES (with PLANNER_REQUIRE_TS_CLIENT=1,
// so that it cannot skip there); elsewhere it skips, saying what is
// missing.
func TestTypeScriptClient(t *testing.T) {
	skip := t.Skipf
	if os.Getenv("PLANNER_REQUIRE_TS_CLIENT") == "1" {
		skip = t.Fatalf
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node is not installed: %v", err)
	}
	modules := os.Getenv("PLANNER_TS_MODULES")
	if modules == "" {
		skip("PLANNER_TS_MODULES names no node_modules folder with openapi-typescript, typescript and openapi-fetch (.ci/run installs one)")
	}
	for _, pkg := range []string{"openapi-typescript", "typescript", "openapi-fetch"} {
		if _, err := os.Stat(filepath.Join(modules, pkg, "package.json")); err != nil {
			skip("the %s npm package is not in %s: %v", pkg, modules, err)
		}
	}
	src := filepath.Join("..", "..", "clients", "typescript")
	dir := t.TempDir()
	for _, f := range []string{"client.ts", "tsconfig.json", "package.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	abs, err := filepath.Abs(modules)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	spec, err := filepath.Abs(filepath.Join("..", "..", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nodeRun(t, dir, node, filepath.Join("node_modules", "openapi-typescript", "bin", "cli.js"), spec, "--output", "planner.d.ts")
	nodeRun(t, dir, node, filepath.Join("node_modules", "typescript", "bin", "tsc"), "--project", ".")

	cleanServeEnv(t)
	r := startServe(t, "serve", "--listen", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "planner.db"))
	var got struct {
		Plan struct {
			Pool              int    `json:"pool"`
			BindingConstraint string `json:"binding_constraint"`
		} `json:"plan"`
		WhatIf []struct {
			Values []float64 `json:"values"`
			Pool   int       `json:"pool"`
		} `json:"what_if"`
		Simulation struct {
			Pool      int  `json:"pool"`
			Completed int  `json:"completed"`
			Holds     bool `json:"holds"`
		} `json:"simulation"`
	}
	out := nodeRun(t, dir, node, filepath.Join("out", "client.js"), r.url)
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the client printed %s: %v", out, err)
	}
	// The scenario's own tpm (1,000,000) is the grid's second cell, which
	// must be the plan; a tenth of it binds a smaller pool. The simulation
	// runs the plan's pool.
	p := got.Plan
	if p.Pool < 1 || p.BindingConstraint != "tpm" || len(got.WhatIf) != 2 ||
		!slices.Equal(got.WhatIf[1].Values, []float64{1e6}) || got.WhatIf[1].Pool != p.Pool || got.WhatIf[0].Pool >= p.Pool {
		t.Errorf("plan and what-if: %s", out)
	}
	if s := got.Simulation; s.Pool != p.Pool || s.Completed < 1 {
		t.Errorf("simulation: %s", out)
	}
}

// nodeRun runs node with args in dir and returns its standard output,
// failing the test with its standard error.
func nodeRun(t *testing.T, dir, node string, args ...string) []byte {
	t.Helper()
	// A bound on the child process, not a measurement.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		var stderr []byte
		if errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("node %v: %v\n%s%s", args, err, out, stderr)
	}
	return out
}
