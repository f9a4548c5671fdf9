package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/scenario"
)

func TestProbeDefaults(t *testing.T) {
	cleanEnv(t)
	cfg, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Probe, DefaultProbe()) {
		t.Fatalf("probe section %+v, want %+v", cfg.Probe, DefaultProbe())
	}
	if p := cfg.Probe; p.MaxConcurrency != 256 || p.MaxRequests != 20000 || p.MaxTokens != 5_000_000 || p.MaxDuration != 30*time.Minute || p.MaxRunning != 2 || len(p.Allow) != 1 || p.Allow[0] != "loopback" {
		t.Errorf("defaults %+v", p)
	}
}

func TestProbeSection(t *testing.T) {
	cleanEnv(t)
	file := writeFile(t, `
probe:
  allow: [loopback, "vllm.internal:8000", "*.models.example:443", "10.20.0.0/16:*"]
  credentials:
    - {name: lab, env: LAB_KEY}
    - {name: azure, env: AZURE_KEY, header: API-KEY}
  max_concurrency: 64
  max_requests: 5000
  max_tokens: 1000000
  max_duration: 10m
  max_running: 3
`)
	t.Setenv(EnvPrefix+"_CONFIG", file)
	t.Setenv(EnvPrefix+"_PROBE_MAX_RUNNING", "4")
	cfg, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Probe
	if len(p.Allow) != 4 || p.MaxConcurrency != 64 || p.MaxRequests != 5000 || p.MaxTokens != 1000000 || p.MaxDuration != 10*time.Minute || p.MaxRunning != 4 {
		t.Errorf("probe section %+v", p)
	}
	if len(p.Credentials) != 2 || p.Credentials[0].Header != "Authorization" || p.Credentials[1].Header != "api-key" {
		t.Errorf("credentials %+v", p.Credentials)
	}
	t.Setenv(EnvPrefix+"_CONFIG", "")
	t.Setenv(EnvPrefix+"_PROBE_ALLOW", "loopback,gateway.internal:8443")
	cfg, err = Load(nil)
	if err != nil || len(cfg.Probe.Allow) != 2 || cfg.Probe.Allow[1] != "gateway.internal:8443" {
		t.Errorf("allow-list from the environment: %v %v", cfg.Probe.Allow, err)
	}
}

// TestProbeSectionProblems lists every problem of a bad probe section by
// its path.
func TestProbeSectionProblems(t *testing.T) {
	cleanEnv(t)
	file := writeFile(t, `
probe:
  allow: [loopback, "vllm.internal", "10.0.0.0/40:*", "host:http"]
  credentials:
    - {name: lab, env: LAB_KEY}
    - {name: lab, env: "1BAD"}
    - {name: "", env: X, header: x-api-key}
  max_concurrency: 0
  max_requests: -1
  max_tokens: 0
  max_duration: 100ms
  max_running: 100
`)
	t.Setenv(EnvPrefix+"_CONFIG", file)
	_, err := Load(nil)
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %v", err)
	}
	got := map[string]string{}
	for _, p := range ps {
		got[p.Path] = p.Message
	}
	for path, want := range map[string]string{
		"probe.allow[1]":              "must be loopback, host:port",
		"probe.allow[2]":              "not a CIDR block",
		"probe.allow[3]":              `port "http"`,
		"probe.credentials[1].name":   `duplicate credential name "lab" (also probe.credentials[0])`,
		"probe.credentials[1].env":    "must be an environment variable name",
		"probe.credentials[2].name":   "required",
		"probe.credentials[2].header": "must be one of: Authorization, api-key",
		"probe.max_concurrency":       "must be >= 1",
		"probe.max_requests":          "must be >= 1",
		"probe.max_tokens":            "must be >= 1",
		"probe.max_duration":          "must be at least 1s",
		"probe.max_running":           "must be <= 64",
	} {
		if !strings.Contains(got[path], want) {
			t.Errorf("%s: %q, want %q", path, got[path], want)
		}
	}
	if len(ps) != 12 {
		t.Errorf("%d problems:\n%v", len(ps), err)
	}
}

// TestBoundsComeFromTheirOwners: a tier takes a quota's bounds and the
// probe caps the bounds of any probe, at the edge and just beyond it.
func TestBoundsComeFromTheirOwners(t *testing.T) {
	cleanEnv(t)
	b := scenario.Bounds()
	longName := strings.Repeat("n", b.NameMaxLength)
	file := writeFile(t, fmt.Sprintf(`
tiers:
  - {name: %s, description: at the bounds, rpm: %g, tpd: %g}
  - {name: %sx, description: beyond them, rpm: %g, tpd: %g}
probe:
  max_concurrency: %d
  max_requests: %d
  max_tokens: %d
  max_duration: %s
`, longName, b.LimitMax["rpm"], b.LimitMax["tpd"], longName, 2*b.LimitMax["rpm"], 2*b.LimitMax["tpd"],
		probe.MaxConcurrency+1, probe.MaxBudgetRequests+1, probe.MaxBudgetTokens+1, probe.MaxBudgetDuration+time.Second))
	t.Setenv(EnvPrefix+"_CONFIG", file)
	_, err := Load(nil)
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %v", err)
	}
	got := map[string]string{}
	for _, p := range ps {
		got[p.Path] = p.Message
	}
	want := map[string]string{
		"tiers[1].name":         fmt.Sprintf("must be at most %d characters long", b.NameMaxLength),
		"tiers[1].rpm":          "must be <= 1e+12",
		"tiers[1].tpd":          "must be <= 1e+15",
		"probe.max_concurrency": "must be <= 10000",
		"probe.max_requests":    "must be <= 10000000",
		"probe.max_tokens":      "must be <= 100000000000",
		"probe.max_duration":    "must be at most 24h0m0s",
	}
	if !maps.Equal(got, want) {
		t.Errorf("problems\n got %v\nwant %v", got, want)
	}
}
