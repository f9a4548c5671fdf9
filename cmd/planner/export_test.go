package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/export"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// TestExport writes each target of a scenario's plan: what export.Write
// renders of the same plan, the model and the metrics file passed on, and
// -o json, --out and the usage errors as for every command.
func TestExport(t *testing.T) {
	dir := t.TempDir()
	text := exampleText(t, "three-classes")
	file := filepath.Join(dir, "support.yaml")
	metrics := filepath.Join(dir, "metrics.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(metrics, []byte("class_label: task\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(plan.Options{}).Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := export.ParseMetrics([]byte("class_label: task\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		to   string
		o    export.Options
	}{
		{[]string{"--to", "prometheus-rules"}, export.ToPrometheusRules, export.Options{}},
		{[]string{"--to", "prometheus-rules", "--metrics", metrics}, export.ToPrometheusRules, export.Options{Metrics: m}},
		{[]string{"--to", "litellm", "--model", "openai/gpt-4o-mini"}, export.ToLiteLLM, export.Options{Model: "openai/gpt-4o-mini"}},
		{[]string{"--to", "client"}, export.ToClient, export.Options{}},
		{[]string{"--to", "litellm", "-o", "json"}, export.ToLiteLLM, export.Options{Format: export.FormatJSON}},
	} {
		code, out, errOut := execute(t, "", append([]string{"export", file}, tc.args...)...)
		var want bytes.Buffer
		if err := export.Write(&want, tc.to, sc, p, tc.o); err != nil {
			t.Fatal(err)
		}
		if code != exitOK || out != want.String() {
			t.Errorf("%v: exit %d %s\n%.500s", tc.args, code, errOut, out)
		}
	}
	if _, out, _ := execute(t, "", "export", file, "--to", "client", "-o", "json"); !json.Valid([]byte(out)) {
		t.Error("export --to client -o json is not JSON")
	}
	path := filepath.Join(dir, "rules.yaml")
	if code, out, _ := execute(t, "", "export", "--example", "chat", "--to", "prometheus-rules", "--out", path); code != exitOK || out != "" {
		t.Errorf("--out: exit %d, stdout %q", code, out)
	} else if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "alert: "+export.AlertTTFT) {
		t.Errorf("--out wrote %v: %.200s", err, b)
	}
	for _, args := range [][]string{
		{"export", file},
		{"export", file, "--to", "grafana"},
		{"export", file, "--to", "litellm", "--metrics", metrics},
		{"export", file, "--to", "client", "--model", "m"},
		{"export", file, "--to", "client", "-o", "toml"},
		{"export", file, "--to", "litellm", "--model", "openai/gpt-4o-mini\nx: y"},
		{"export", file, "--to", "litellm", "--model", "openai/gpt-4o-mini "},
	} {
		if code, out, errOut := execute(t, "", args...); code != exitUsage || out != "" {
			t.Errorf("%v: exit %d %q %s; want a usage error", args, code, out, errOut)
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("window: soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := execute(t, "", "export", file, "--to", "prometheus-rules", "--metrics", bad); code != exitError || !strings.Contains(errOut, "window: must be a Prometheus duration") {
		t.Errorf("a bad metrics file: exit %d %s", code, errOut)
	}
}
