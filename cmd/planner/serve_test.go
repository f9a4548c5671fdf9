package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/testutil"
)

// cleanServeEnv keeps the machine's PLANNER_* variables out of a test.
func cleanServeEnv(t *testing.T) {
	t.Helper()
	for _, name := range []string{"CONFIG", "LISTEN", "DB", "AUTH_TOKENS", "LIMITS_MAX_BODY_BYTES"} {
		t.Setenv("PLANNER_"+name, "")
	}
}

// running is a `planner serve` started by startServe.
type running struct {
	url    string
	out    *testutil.SyncBuffer
	errOut *testutil.SyncBuffer
	stop   context.CancelFunc
	code   chan int
}

var servingLine = regexp.MustCompile(`serving on (http://127\.0\.0\.1:[0-9]+) \(docs at http://127\.0\.0\.1:[0-9]+/docs\)`)

// startServe runs the command line (serve, or the root's default action)
// until the test ends, and waits for it to print its address.
func startServe(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{out: &testutil.SyncBuffer{}, errOut: &testutil.SyncBuffer{}, stop: cancel, code: make(chan int, 1)}
	go func() { r.code <- run(ctx, args, strings.NewReader(""), r.out, r.errOut) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.code:
		case <-time.After(time.Minute):
			t.Error("serve did not stop")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := servingLine.FindStringSubmatch(r.out.String()); m != nil {
			r.url = m[1]
			return r
		}
		select {
		case code := <-r.code:
			t.Fatalf("serve exited with %d: %s%s", code, r.out, r.errOut)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve printed no address: %s", r.out)
	return nil
}

// wait returns the exit code after stop.
func (r *running) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-r.code:
		r.code <- code // for the cleanup
		return code
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop")
		return -1
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeAnswersAndStops(t *testing.T) {
	cleanServeEnv(t)
	db := filepath.Join(t.TempDir(), "planner.db")
	r := startServe(t, "serve", "--listen", "127.0.0.1:0", "--db", db)
	if code, body := get(t, r.url+"/healthz"); code != http.StatusOK || !strings.Contains(body, "ok") {
		t.Errorf("/healthz: %d %s", code, body)
	}
	if code, body := get(t, r.url+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz with the store open: %d %s", code, body)
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("the store file was not created: %v", err)
	}
	r.stop()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d after cancel: %s", code, r.errOut)
	}
	if !strings.Contains(r.out.String(), "planner: stopped") {
		t.Errorf("output: %s", r.out)
	}
	if !strings.Contains(r.errOut.String(), `"path":"/healthz"`) {
		t.Errorf("no access log on standard error: %s", r.errOut)
	}
}

// TestServeIsTheDefault starts `planner` with no command, configured by
// the environment.
func TestServeIsTheDefault(t *testing.T) {
	cleanServeEnv(t)
	t.Setenv("PLANNER_LISTEN", "127.0.0.1:0")
	t.Setenv("PLANNER_DB", filepath.Join(t.TempDir(), "planner.db"))
	r := startServe(t)
	if code, _ := get(t, r.url+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	r.stop()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d", code)
	}
}

// TestServeFinishesRequestsInFlight stops the server while a large what-if
// is being planned: the request still gets its whole answer, then the
// command exits 0.
func TestServeFinishesRequestsInFlight(t *testing.T) {
	cleanServeEnv(t)
	r := startServe(t, "serve", "--listen", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "planner.db"))
	text, _ := planner.Example("measured-curve")
	js, err := yaml.YAMLToJSON(text)
	if err != nil {
		t.Fatal(err)
	}
	values := make([]int, 40)
	for i := range values {
		values[i] = 300 + 7*i
	}
	body, _ := json.Marshal(map[string]any{
		"scenario":   json.RawMessage(js),
		"variations": []any{map[string]any{"path": "/classes/0/input_tokens/p50", "values": values}},
	})
	type answer struct {
		status int
		cells  int
		err    error
	}
	done := make(chan answer, 1)
	sent := make(chan struct{})
	go func() {
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { close(sent) }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost, r.url+"/v1/what-if", bytes.NewReader(body))
		if err != nil {
			done <- answer{err: err}
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var grid struct {
			Cells []json.RawMessage `json:"cells"`
		}
		err = json.NewDecoder(resp.Body).Decode(&grid)
		done <- answer{status: resp.StatusCode, cells: len(grid.Cells), err: err}
	}()
	select {
	case <-sent:
	case a := <-done:
		t.Fatalf("the request failed before it was sent: %v", a.err)
	}
	time.Sleep(200 * time.Millisecond) // the server has read it and is planning
	r.stop()
	a := <-done
	if a.err != nil || a.status != http.StatusOK || a.cells != len(values) {
		t.Fatalf("request in flight: status %d, %d cells, %v", a.status, a.cells, a.err)
	}
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d: %s", code, r.errOut)
	}
}

func TestServeRefusesOpenNonLoopback(t *testing.T) {
	cleanServeEnv(t)
	code, _, errOut := execute(t, "", "serve", "--listen", "0.0.0.0:0", "--db", filepath.Join(t.TempDir(), "planner.db"))
	if code != exitError || !strings.Contains(errOut, "auth.tokens: required") || !strings.Contains(errOut, "0.0.0.0:0 is not a loopback address") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestServeRefusesBadConfig(t *testing.T) {
	cleanServeEnv(t)
	file := filepath.Join(t.TempDir(), "planner.yaml")
	err := os.WriteFile(file, []byte(`
listen: 127.0.0.1:0
limits: {max_body_bytes: -1}
colour: blue
tiers:
  - {name: a, description: tier a, rpm: -5}
  - {name: a, description: tier a again, tpm: 10, token_accounting: sometimes}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := execute(t, "", "serve", "--config", file, "--db", filepath.Join(t.TempDir(), "planner.db"))
	if code != exitError {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{
		"invalid configuration (5 problems)",
		"colour: unknown setting",
		"limits.max_body_bytes: must be >= 1024",
		"tiers[0].rpm: must be >= 0",
		`tiers[1].name: duplicate tier name "a" (also tiers[0])`,
		"tiers[1].token_accounting: must be one of: actual, max_tokens",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the message lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(out, "serving on") {
		t.Errorf("it served: %s", out)
	}
}
