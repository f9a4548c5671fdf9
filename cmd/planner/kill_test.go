//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/store"
	"github.com/plannerdev/planner/internal/testutil"
	"github.com/plannerdev/planner/internal/testutil/pgtest"
)

// serveChildEnv, when set to a database path, turns the test binary into
// `planner serve --listen 127.0.0.1:0 --db PATH`, so that a test can kill
// the service with SIGKILL.
const serveChildEnv = "PLANNER_TEST_SERVE_CHILD_DB"

// commandChildEnv, when set to a JSON list of arguments, turns the test
// binary into `planner ARGS...` with main's handling of signals, so that a
// test can signal a running command.
const commandChildEnv = "PLANNER_TEST_COMMAND_CHILD"

func TestMain(m *testing.M) {
	if args := os.Getenv(commandChildEnv); args != "" {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			panic(err)
		}
		ctx, stop := withSignals(context.Background())
		code := run(ctx, argv, os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if db := os.Getenv(serveChildEnv); db != "" {
		ctx, stop := withSignals(context.Background())
		code := run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--db", db}, os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(pgtest.Main(m))
}

// child is a `planner serve` in a child process.
type child struct {
	cmd    *exec.Cmd
	url    string
	stderr *testutil.SyncBuffer
}

// startChild starts the service on db in a child process, with the
// environment variables env besides the test's, and reads the address it
// prints.
func startChild(t *testing.T, db string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), serveChildEnv+"="+db), env...)
	c := &child{cmd: cmd, stderr: &testutil.SyncBuffer{}}
	cmd.Stderr = c.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				lines <- m[1]
			}
		}
	}()
	select {
	case c.url = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatalf("the child printed no address: %s", c.stderr)
	}
	return c
}

// jsonCall sends a request and returns the status and body.
func jsonCall(t *testing.T, method, url string, body any) (int, []byte) {
	t.Helper()
	status, _, b := testutil.CallJSON(t, method, url, body)
	return status, b
}

type probeView struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Counts struct {
		Records int `json:"records"`
	} `json:"counts"`
	Steps []json.RawMessage `json:"steps"`
}

func getProbe(t *testing.T, url, id string) probeView {
	t.Helper()
	status, b := jsonCall(t, http.MethodGet, url+"/v1/probes/"+id, nil)
	var p probeView
	if status != http.StatusOK || json.Unmarshal(b, &p) != nil {
		t.Fatalf("get probe: %d %s", status, b)
	}
	return p
}

// waitProbe waits until cond holds of the probe as GET returns it: it
// checks at once, then after every event of the probe's event stream
// (progress comes several times a second while a step runs), which ends
// with the probe.
func waitProbe(t *testing.T, url, id string, cond func(probeView) bool) probeView {
	t.Helper()
	var p probeView
	if !testutil.UntilEvents(t, url+"/v1/probes/"+id+"/events", func() bool { p = getProbe(t, url, id); return cond(p) }) {
		t.Fatalf("probe %s: the condition does not hold when its events end: %+v", id, p)
	}
	return p
}

// slowSimURL serves a simulator whose answers take about 170 ms.
func slowSimURL(t *testing.T) string {
	t.Helper()
	s, err := fakeendpoint.New(fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func longProbe(simURL string) map[string]any {
	return map[string]any{
		"target": map[string]any{"base_url": simURL, "model": fakeendpoint.DefaultModel},
		"steps":  []int{1, 2}, "requests_per_step": 200, "max_tokens": 8, "ignore_eos": true, "input_tokens": 32,
	}
}

// TestKillMidProbe starts the service in a child process, saves a plan,
// starts a probe, kills the service with SIGKILL once the probe has
// written rows, and restarts it on the same database: the plan is intact
// (the same JSON, byte for byte), the probe is interrupted (on SQLite at
// the restart, on PostgreSQL once the killed service's lease expired), and
// its rows are all there.
func TestKillMidProbe(t *testing.T) {
	cleanServeEnv(t)
	eachDB(t, func(t *testing.T, db string, env []string) { testKillMidProbe(t, db, env) })
}

func testKillMidProbe(t *testing.T, db string, env []string) {
	first := startChild(t, db, env...)
	simURL := slowSimURL(t)

	status, b := jsonCall(t, http.MethodPost, first.url+"/v1/probes", longProbe(simURL))
	var started probeView
	if status != http.StatusAccepted || json.Unmarshal(b, &started) != nil {
		t.Fatalf("start the probe: %d %s", status, b)
	}
	text, _ := planner.Example("chat")
	doc, err := yaml.YAMLToJSON(text)
	if err != nil {
		t.Fatal(err)
	}
	status, b = jsonCall(t, http.MethodPost, first.url+"/v1/plans", map[string]any{
		"scenario": json.RawMessage(doc), "save": true, "name": "before the kill", "probe_id": started.ID,
	})
	var saved struct {
		ID string `json:"id"`
	}
	if status != http.StatusOK || json.Unmarshal(b, &saved) != nil || saved.ID == "" {
		t.Fatalf("save the plan: %d %.300s", status, b)
	}
	_, planBefore := jsonCall(t, http.MethodGet, first.url+"/v1/plans/"+saved.ID, nil)

	before := waitProbe(t, first.url, started.ID, func(p probeView) bool { return p.Counts.Records >= 3 })
	if before.Status != "running" {
		t.Fatalf("status %s before the kill", before.Status)
	}
	counted := before.Counts.Records
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := first.cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the child ended with %v", err)
	}

	second := startChild(t, db, env...)
	_, planAfter := jsonCall(t, http.MethodGet, second.url+"/v1/plans/"+saved.ID, nil)
	if !bytes.Equal(planBefore, planAfter) {
		t.Fatalf("the plan changed across the kill:\nbefore %.300s\nafter  %.300s", planBefore, planAfter)
	}
	p := waitProbe(t, second.url, started.ID, func(p probeView) bool { return p.Status != "running" })
	if p.Status != "interrupted" || p.Counts.Records < counted {
		t.Fatalf("after the restart: %+v, %d rows counted before the kill", p, counted)
	}
	status, b = jsonCall(t, http.MethodGet, second.url+"/v1/probes/"+started.ID+"/requests.csv", nil)
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if status != http.StatusOK || err != nil || len(rows)-1 < counted || len(rows)-1 != p.Counts.Records {
		t.Fatalf("requests.csv after the restart: %d, %d rows (%v); %d counted before, %d stored", status, len(rows)-1, err, counted, p.Counts.Records)
	}
	t.Logf("%d rows counted before the kill, %d stored", counted, p.Counts.Records)
	if err := second.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("the second child: %v %s", err, second.stderr)
	}
}

// TestShutdownInterruptsProbes stops the service while a probe runs: it
// exits cleanly, and the probe is marked interrupted with its rows kept.
func TestShutdownInterruptsProbes(t *testing.T) {
	cleanServeEnv(t)
	db := filepath.Join(t.TempDir(), "planner.db")
	r := startServe(t, "serve", "--listen", "127.0.0.1:0", "--db", db)
	status, b := jsonCall(t, http.MethodPost, r.url+"/v1/probes", longProbe(slowSimURL(t)))
	var started probeView
	if status != http.StatusAccepted || json.Unmarshal(b, &started) != nil {
		t.Fatalf("start the probe: %d %s", status, b)
	}
	waitProbe(t, r.url, started.ID, func(p probeView) bool { return p.Counts.Records > 0 })
	r.stop()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d: %s", code, r.errOut)
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, err := st.GetProbe(context.Background(), started.ID)
	if err != nil || run.Status != store.StatusInterrupted || run.Counts.Records == 0 || run.Result == nil || run.Result.StopReason != "cancelled" {
		t.Fatalf("probe after shutdown: %+v %v", run, err)
	}
	if !strings.Contains(run.Error, "shut down") {
		t.Errorf("error %q", run.Error)
	}
}

// TestSecondServeNamesTheFirst starts a second service on the store file
// of a service running in another process: it exits 1 at once with a
// message that names the file and the first service's process id. The
// first goes on and stops cleanly.
func TestSecondServeNamesTheFirst(t *testing.T) {
	cleanServeEnv(t)
	db := filepath.Join(t.TempDir(), "planner.db")
	first := startChild(t, db)
	code, out, errOut := runBriefly("serve", "--listen", "127.0.0.1:0", "--db", db)
	if code != exitError || strings.Contains(out, "serving on") {
		t.Fatalf("the second service: exit %d: %s%s", code, out, errOut)
	}
	if want := fmt.Sprintf("the store %s is in use by another process (pid %d)", db, first.cmd.Process.Pid); !strings.Contains(errOut, want) {
		t.Errorf("the message lacks %q: %s", want, errOut)
	}
	if status, _ := jsonCall(t, http.MethodGet, first.url+"/readyz", nil); status != http.StatusOK {
		t.Errorf("the first service: /readyz %d", status)
	}
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := first.cmd.Wait(); err != nil {
		t.Fatalf("the first service: %v %s", err, first.stderr)
	}
}

// TestSIGTERMDuringValidation sends SIGTERM to the service while a plan
// validation runs (one that would take minutes): the validation is
// stopped, its client gets a clean answer (a 503) or a closed stream, and
// the process exits 0, well within its shutdown timeout.
func TestSIGTERMDuringValidation(t *testing.T) {
	cleanServeEnv(t)
	c := startChild(t, filepath.Join(t.TempDir(), "planner.db"))
	s, err := fakeendpoint.New(fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	if err != nil {
		t.Fatal(err)
	}
	var chats atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			chats.Add(1)
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(target.Close)
	status, b := jsonCall(t, http.MethodPost, c.url+"/v1/plans", map[string]any{"save": true, "scenario": map[string]any{
		"quotas":  []any{map[string]any{"name": "k", "rpm": 100000}},
		"latency": map[string]any{"ttft_ms": map[string]any{"fixed": 100}, "tpot_ms": map[string]any{"fixed": 10}, "knee": 4},
		"classes": []any{map[string]any{"name": "jobs", "quota": "k", "mode": "batch", "input_tokens": map[string]any{"fixed": 64},
			"output_tokens": map[string]any{"fixed": 8}, "max_tokens": 8}},
	}})
	var saved struct {
		ID string `json:"id"`
	}
	if status != http.StatusOK || json.Unmarshal(b, &saved) != nil || saved.ID == "" {
		t.Fatalf("save the plan: %d %.300s", status, b)
	}
	type answer struct {
		status int
		body   []byte
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		body, _ := json.Marshal(map[string]any{
			"target": map[string]any{"base_url": target.URL + "/v1", "model": fakeendpoint.DefaultModel}, "requests_per_step": 2000, "pause_ms": 0,
		})
		req, err := http.NewRequest(http.MethodPost, c.url+"/v1/plans/"+saved.ID+"/validate", bytes.NewReader(body))
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
		b, err := io.ReadAll(resp.Body)
		done <- answer{status: resp.StatusCode, body: b, err: err}
	}()
	for chats.Load() == 0 {
		select {
		case a := <-done:
			t.Fatalf("the validation ended before it ran: %d %s %v", a.status, a.body, a.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("the service after SIGTERM: %v\n%s", err, c.stderr)
	}
	a := <-done
	switch {
	case a.err == nil && a.status == http.StatusServiceUnavailable && strings.Contains(string(a.body), "shutting down"):
	case a.err != nil && a.status == 0:
		t.Logf("the stream was closed: %v", a.err)
	default:
		t.Fatalf("the validation's client got %d %s %v", a.status, a.body, a.err)
	}
}

// TestSignalStopsALongPlan runs `planner plan` on a scenario that takes
// many seconds to plan, in a child process, and signals it once it is
// computing (it has used half a second of CPU): it stops within a second
// and exits 130 for SIGINT, 143 for SIGTERM, saying so.
func TestSignalStopsALongPlan(t *testing.T) {
	file := filepath.Join(t.TempDir(), "slow.json")
	if err := os.WriteFile(file, []byte(testutil.SlowScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{{syscall.SIGTERM, 143, "SIGTERM"}, {syscall.SIGINT, 130, "SIGINT"}} {
		t.Run(tc.name, func(t *testing.T) {
			args, _ := json.Marshal([]string{"plan", "-f", file, "-o", "json"})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), commandChildEnv+"="+string(args))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			for cpuTime(t, cmd.Process.Pid) < 500*time.Millisecond {
				select {
				case <-exited:
					t.Fatalf("the plan ended before it was signalled: %s", stderr.String())
				case <-time.After(10 * time.Millisecond):
				}
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(time.Second):
				t.Fatalf("still planning a second after %s", tc.name)
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.code || !strings.Contains(stderr.String(), "stopped by "+tc.name) || stdout.Len() != 0 {
				t.Fatalf("exit %d, stderr %q, %d bytes of output; want %d, stopped by %s, none", code, stderr.String(), stdout.Len(), tc.code, tc.name)
			}
		})
	}
}

// cpuTime is the CPU time (user and system) that a running process has
// used, from /proc; the test is skipped where there is no /proc.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) && pid > 0 {
		if _, err := os.Stat("/proc/self/stat"); err != nil {
			t.Skip("no /proc to read a process's CPU time from")
		}
		return 0 // it has just exited
	}
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's name, which ends with the last ")":
	// utime and stime are the 12th and 13th, in clock ticks (100 a second
	// on Linux).
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// TestSIGTERMDuringAPlan stops the service while it plans a scenario that
// takes many seconds: the client is answered 503 at once, and the service
// exits 0 long before the plan would have ended.
func TestSIGTERMDuringAPlan(t *testing.T) {
	cleanServeEnv(t)
	c := startChild(t, filepath.Join(t.TempDir(), "planner.db"))
	type answer struct {
		status int
		body   []byte
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := http.Post(c.url+"/v1/plans", "application/json", strings.NewReader(`{"scenario":`+testutil.SlowScenario+`}`))
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- answer{status: resp.StatusCode, body: b, err: err}
	}()
	for cpuTime(t, c.cmd.Process.Pid) < 700*time.Millisecond {
		select {
		case a := <-done:
			t.Fatalf("the plan ended before the signal: %d %.300s %v", a.status, a.body, a.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-done:
		if a.err != nil || a.status != http.StatusServiceUnavailable || !strings.Contains(string(a.body), "shutting down") {
			t.Fatalf("the plan's client got %d %s %v", a.status, a.body, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer 10 s after SIGTERM")
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("the service after SIGTERM: %v\n%s", err, c.stderr)
	}
}
