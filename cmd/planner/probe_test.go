package main

import (
	"encoding/json"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/fakeendpoint"
)

// probeSim serves a fast simulator on 127.0.0.1 and returns its base URL.
func probeSim(t *testing.T, cfg fakeendpoint.Config) string {
	t.Helper()
	srv, err := fakeendpoint.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts.URL + "/v1"
}

// withFlag is args with the value of flag replaced (--model takes
// several values, so giving it again adds a model).
func withFlag(args []string, flag, value string) []string {
	out := slices.Clone(args)
	out[slices.Index(out, flag)+1] = value
	return out
}

// fastProbeArgs are the flags of a small, quick probe.
func fastProbeArgs(base, out string) []string {
	return []string{"probe", "--base-url", base, "--model", fakeendpoint.DefaultModel, "--steps", "1,2,4",
		"--max-tokens", "4", "--ignore-eos", "--input-tokens", "16",
		"--pause", "1ms", "--out", out}
}

func TestProbeCommand(t *testing.T) {
	const key = "sk-probe-test-0123456789abcdef"
	t.Setenv("PLANNER_PROBE_TEST_KEY", key)
	base := probeSim(t, fakeendpoint.Config{APIKey: key, RPM: 100000, MaxNumSeqs: 8, TTFT: 2 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := execute(t, "", append(fastProbeArgs(base, out), "--api-key-env", "PLANNER_PROBE_TEST_KEY")...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"conc", "knee:", "USL", "stop: completed", "rate limits announced:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "concurrency 4:") {
		t.Errorf("no progress line for the last step on stderr:\n%s", stderr)
	}
	for _, name := range []string{"requests.csv", "steps.json", "curve.yaml"} {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(string(data), key) {
			t.Errorf("%s contains the API key", name)
		}
	}
	if strings.Contains(stdout+stderr, key) {
		t.Error("the output contains the API key")
	}
	var steps map[string]any
	data, _ := os.ReadFile(filepath.Join(out, "steps.json"))
	if err := json.Unmarshal(data, &steps); err != nil {
		t.Fatal(err)
	}
	if steps["knee"] == nil || len(steps["steps"].([]any)) != 3 {
		t.Errorf("steps.json: knee %v, steps %v", steps["knee"], steps["steps"])
	}
}

func TestProbeCommandFailures(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/v1"
	l.Close()
	base := probeSim(t, fakeendpoint.Config{MaxNumSeqs: 8, TTFT: time.Millisecond, ITL: time.Millisecond})
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unreachable endpoint", fastProbeArgs(closed, filepath.Join(dir, "a")), exitError, "unreachable"},
		{"wrong model", withFlag(fastProbeArgs(base, filepath.Join(dir, "b")), "--model", "nope"), exitError, "refused"},
		{"unknown flag", []string{"probe", "--base-url", base, "--model", "m", "--bogus"}, exitUsage, "bogus"},
		{"missing model", []string{"probe", "--base-url", base}, exitUsage, "--model"},
		{"a blank model", []string{"probe", "--base-url", base, "--model", " "}, exitUsage, "planner: --model: required"},
		{"an empty name in the list", []string{"probe", "--base-url", base, "--model", "a,,b"}, exitUsage, `planner: --model "a,,b": the 2nd name is empty; give each model's name, comma-separated`},
		{"a comma alone", []string{"probe", "--base-url", base, "--model", ","}, exitUsage, `planner: --model ",": the 1st name is empty`},
		{"steps not ascending", append(fastProbeArgs(base, dir), "--steps", "4,2"), exitUsage, "ascending"},
		{"bad steps", append(fastProbeArgs(base, dir), "--steps", "one"), exitUsage, "steps"},
		{"zero deadline", append(fastProbeArgs(base, dir), "--deadline", "0s"), exitUsage, "--deadline"},
		{"a negative budget", append(fastProbeArgs(base, dir), "--max-requests", "-1"), exitUsage, "planner: --max-requests: -1 requests, must be at least 1, or 0: only the ladder bounds them"},
		{"a negative token budget", append(fastProbeArgs(base, dir), "--max-tokens-total", "-5"), exitUsage, "planner: --max-tokens-total: -5 tokens, must be at least 1, or 0: only the ladder bounds them"},
		{"key variable unset", append(fastProbeArgs(base, dir), "--api-key-env", "PLANNER_PROBE_UNSET_VAR"), exitUsage, "PLANNER_PROBE_UNSET_VAR"},
		{"missing prompts file", append(fastProbeArgs(base, dir), "--prompts", filepath.Join(dir, "none.jsonl")), exitUsage, "--prompts"},
		{"bad scheme", []string{"probe", "--base-url", "ftp://127.0.0.1/v1", "--model", "m"}, exitUsage, "scheme"},
		{"a fragment", []string{"probe", "--base-url", base + "#access_token=abcdefgh12345678", "--model", "m"}, exitUsage, "fragment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := execute(t, "", tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d; stderr lacks %q?\nstdout:\n%s\nstderr:\n%s", code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
}

func TestProbeCommandPrompts(t *testing.T) {
	base := probeSim(t, fakeendpoint.Config{MaxNumSeqs: 8, TTFT: time.Millisecond, ITL: time.Millisecond})
	dir := t.TempDir()
	prompts := filepath.Join(dir, "prompts.jsonl")
	if err := os.WriteFile(prompts, []byte(`{"prompt":"Tell me a story."}`+"\n"+`{"messages":[{"role":"user","content":"Hi"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := execute(t, "", append(fastProbeArgs(base, filepath.Join(dir, "out")), "--prompts", prompts)...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "out", "steps.json"))
	if err != nil || !strings.Contains(string(data), `"prompts": 2`) {
		t.Errorf("steps.json does not record the prompts: %v\n%s", err, data)
	}
}

// TestProbeCommandShapes runs a search, an open loop, and the refusals
// of the step-size minimum and of flags that do not go together. The
// simulator's 36 ms requests keep its four slots, not the client (slowed
// down by the race detector or a loaded machine), the bottleneck, so the
// search finds a failing step.
func TestProbeCommandShapes(t *testing.T) {
	base := probeSim(t, fakeendpoint.Config{MaxNumSeqs: 4, TTFT: 20 * time.Millisecond, ITL: 4 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	dir := t.TempDir()
	common := []string{"probe", "--base-url", base, "--model", fakeendpoint.DefaultModel, "--max-tokens", "4", "--ignore-eos", "--input-tokens", "16", "--pause", "1ms"}

	code, out, errOut := execute(t, "", append(common, "--search", "--max-concurrency", "16", "-o", "json", "--out", filepath.Join(dir, "search"))...)
	if code != exitOK {
		t.Fatalf("search: exit %d\n%s", code, errOut)
	}
	var doc struct {
		Knee        *int `json:"knee"`
		KneeRefined *int `json:"knee_refined"`
		Spent       []struct {
			Part     string `json:"part"`
			Requests int    `json:"requests"`
		} `json:"spent"`
		Config struct {
			Search bool `json:"search"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || !doc.Config.Search || doc.Knee == nil || doc.KneeRefined == nil ||
		len(doc.Spent) != 2 || doc.Spent[0].Part != "search" || doc.Spent[1].Part != "refine" {
		t.Fatalf("search -o json: %v\n%s", err, out)
	}

	code, out, errOut = execute(t, "", append(common, "--rates", "40,80", "--max-in-flight", "4", "--out", filepath.Join(dir, "open"))...)
	if code != exitOK || !strings.Contains(out, "40.000") || !strings.Contains(out, "80.000") || !strings.Contains(out, "spent on the open loop") {
		t.Fatalf("open loop: exit %d\n%s%s", code, out, errOut)
	}

	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"too few requests", []string{"--requests-per-step", "16"}, "15 measured at concurrency 1, fewer than the minimum max(40, 3c) = 40"},
		{"search with steps", []string{"--search", "--steps", "1,2"}, "--steps: a knee search chooses its own steps"},
		{"max concurrency without search", []string{"--max-concurrency", "8"}, "--max-concurrency: bounds a knee search"},
		{"rates without a cap", []string{"--rates", "5"}, "--max-in-flight: 0 requests in flight is outside 1..10000: an open loop needs a cap"},
		{"a cap without rates", []string{"--max-in-flight", "4"}, "--rates: 0 rates"},
		{"rates with a search", []string{"--rates", "5", "--max-in-flight", "4", "--search"}, "--search: a knee search is a closed loop"},
		{"search with a step size", []string{"--search", "--requests-per-step", "100"}, "a search sizes its steps itself"},
		{"a file in -o", []string{"-o", "out.json"}, "a file to write goes in --out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := execute(t, "", append(append([]string{}, common...), tc.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tc.says) {
				t.Errorf("exit %d, stderr %q; want exit 2 saying %q", code, errOut, tc.says)
			}
		})
	}
	code, out, _ = execute(t, "", "probe", "--help")
	if code != exitOK || !strings.Contains(out, "when a step has no successful") {
		t.Errorf("probe --help does not name the no-success stop rule:\n%s", out)
	}
}

// TestProbeCommandPromptModes runs a prefill ladder, a cache comparison
// and a conversation against a simulator with a prefix cache, and the
// refusals of their flags: each writes prefill.yaml and prints what it
// measured. (How close they come to the simulator's settings is the
// probe's fake-clock tests' to check.)
func TestProbeCommandPromptModes(t *testing.T) {
	base := probeSim(t, fakeendpoint.Config{MaxNumSeqs: 4, TTFT: 5 * time.Millisecond, PrefillPer1K: 5 * time.Millisecond, ITL: time.Millisecond,
		ITLGrowth: fakeendpoint.NoGrowth, PrefixCacheTokens: 1_000_000})
	dir := t.TempDir()
	common := []string{"probe", "--base-url", base, "--model", fakeendpoint.DefaultModel, "--max-tokens", "4", "--ignore-eos", "--pause", "1ms"}
	for _, tc := range []struct {
		name string
		args []string
		says []string
		keys []string
	}{
		{"prefill", []string{"--prefill-ladder", "256,1024,4096", "--requests-per-step", "4"},
			[]string{"prefill: TTFT = ", "input_tokens  cached", "spent on the prefill ladder"}, []string{"prefill_ms_per_1k_tokens:"}},
		{"cache", []string{"--cache", "--requests-per-step", "6"},
			[]string{"cache: 5 repeated and 5 fresh prompts", "ms per 1,000 cached tokens"}, []string{"cache:", "hit_rate:", "ttft_saving_ms_per_1k:"}},
		{"conversation", []string{"--conversation-calls", "3", "--tasks", "3", "--tool-time", "2ms", "--input-tokens", "64", "--tool-result-tokens", "32"},
			[]string{"conversation: 2 tasks measured (0 failed)", "call  requests"}, []string{"hit_rate:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name)
			code, stdout, stderr := execute(t, "", append(append(slices.Clone(common), tc.args...), "--out", out)...)
			if code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			for _, want := range tc.says {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			b, err := os.ReadFile(filepath.Join(out, "prefill.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.keys {
				if !strings.Contains(string(b), want) {
					t.Errorf("prefill.yaml lacks %q:\n%s", want, b)
				}
			}
			if _, err := os.Stat(filepath.Join(out, "curve.yaml")); err == nil {
				t.Error("a prompt-cost mode wrote curve.yaml")
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"cache with steps", []string{"--cache", "--steps", "1,2"}, "--steps: a cache comparison runs at a load of its own"},
		{"prefill and cache", []string{"--cache", "--prefill-ladder", "256,512"}, "--cache: is a mode of its own: give prefill or cache"},
		{"one length", []string{"--prefill-ladder", "256"}, "--prefill-ladder: 1 lengths, want 2 to 64"},
		{"tasks without calls", []string{"--tasks", "4"}, "--conversation-calls: is required: a conversation replays tasks of 2..100 serial calls"},
		{"too few of each kind", []string{"--cache", "--requests-per-step", "3"}, "--requests-per-step: 3 requests of each kind with 1 of warm-up leave 2 measured"},
		{"a bad SLO", []string{"--slo", "ttft:soon"}, "--slo: ttft: \"soon\" is neither a duration"},
		{"an SLO out of range", []string{"--slo", "e2e:2h"}, "--slo: e2e: 2h is beyond the longest target, 1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := execute(t, "", append(slices.Clone(common), tc.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tc.says) {
				t.Errorf("exit %d, stderr %q; want exit 2 saying %q", code, errOut, tc.says)
			}
		})
	}
}

// TestProbeCommandSLO: --slo reaches the run, steps.json carries it and
// each step's attainment, and the table prints them.
func TestProbeCommandSLO(t *testing.T) {
	base := probeSim(t, fakeendpoint.Config{MaxNumSeqs: 8, TTFT: 2 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := execute(t, "", append(fastProbeArgs(base, out), "--slo", "ttft:10s,tpot:5s")...)
	if code != exitOK || !strings.Contains(stdout, "SLO ttft:10000ms,tpot:5000ms: goodput counts the requests that met every target at once") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var doc struct {
		SLO   map[string]float64 `json:"slo"`
		Steps []struct {
			Requests int `json:"requests"`
			SLO      struct {
				Met        int     `json:"met"`
				Attainment float64 `json:"attainment"`
			} `json:"slo"`
		} `json:"steps"`
	}
	data, _ := os.ReadFile(filepath.Join(out, "steps.json"))
	if err := json.Unmarshal(data, &doc); err != nil || doc.SLO["ttft_ms"] != 10_000 || doc.SLO["tpot_ms"] != 5000 || len(doc.Steps) != 3 {
		t.Fatalf("steps.json: %v\n%s", err, data)
	}
	for _, s := range doc.Steps {
		if s.SLO.Met != s.Requests || s.SLO.Attainment != 1 {
			t.Errorf("a step of requests far within the SLO: %+v", s)
		}
	}
}

// TestProbeOutUnwritable: an --out that the run's files could not be
// written to (a file, a path under a file) is refused before anything is
// sent, not after the run has spent its requests.
func TestProbeOutUnwritable(t *testing.T) {
	ts, sent := countingEndpoint(t)
	file := filepath.Join(t.TempDir(), "results")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{file, filepath.Join(file, "run1")} {
		for _, args := range [][]string{fastProbeArgs(ts.URL+"/v1", out), append(fastProbeArgs(ts.URL+"/v1", out), "--model", "a,b")} {
			code, stdout, stderr := execute(t, "", args...)
			if code != exitError || stdout != "" || !strings.Contains(stderr, "--out "+out+": "+file+" is a file, not a directory") || !strings.Contains(stderr, "nothing was sent") {
				t.Errorf("--out %s: exit %d\n%s%s", out, code, stdout, stderr)
			}
		}
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	// A directory that does not exist yet is created by the run, as before.
	out := filepath.Join(t.TempDir(), "new", "run")
	if code, _, stderr := execute(t, "", fastProbeArgs(ts.URL+"/v1", out)...); code != exitOK {
		t.Fatalf("a new directory: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "steps.json")); err != nil {
		t.Error(err)
	}
}
