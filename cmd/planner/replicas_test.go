//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/testutil/pgtest"
)

// replicaLease is the lease of the replicas these tests start: short, so
// that a killed one's probe is interrupted within seconds.
const replicaLease = 2 * time.Second

// eachDB runs test on a new SQLite file and on a new PostgreSQL database,
// with the environment of the services to start on it.
func eachDB(t *testing.T, test func(t *testing.T, db string, env []string)) {
	t.Run("sqlite", func(t *testing.T) { test(t, filepath.Join(t.TempDir(), "planner.db"), nil) })
	t.Run("postgres", func(t *testing.T) {
		test(t, pgtest.DSN(t), []string{"PLANNER_PROBE_LEASE=" + replicaLease.String()})
	})
}

// countingSim serves the simulator, counting the chat requests it gets.
func countingSim(t *testing.T, cfg fakeendpoint.Config) (string, *atomic.Int64) {
	t.Helper()
	s, err := fakeendpoint.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var chats atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			chats.Add(1)
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", &chats
}

// stream is what a probe's event stream sent: the name of each event,
// and the data of the last.
type stream struct {
	names []string
	last  string
}

// followEvents reads a probe's event stream until it ends.
func followEvents(t *testing.T, url string) <-chan stream {
	out := make(chan stream, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	go func() {
		defer resp.Body.Close()
		var s stream
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				s.names = append(s.names, name)
			}
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				s.last = data
			}
		}
		out <- s
	}()
	return out
}

func probeBodyFor(simURL string, steps []int, requests int) map[string]any {
	b := longProbe(simURL)
	b["steps"], b["requests_per_step"] = steps, requests
	return b
}

func startProbeAt(t *testing.T, url string, body map[string]any) string {
	t.Helper()
	status, b := jsonCall(t, http.MethodPost, url+"/v1/probes", body)
	var p probeView
	if status != http.StatusAccepted || json.Unmarshal(b, &p) != nil {
		t.Fatalf("start a probe at %s: %d %s", url, status, b)
	}
	return p.ID
}

func stopChild(t *testing.T, c *child) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("the service after SIGTERM: %v\n%s", err, c.stderr)
	}
}

// TestReplicasShareOneDatabase runs two `planner serve` processes on one
// PostgreSQL database: a plan saved through one is read, with its report,
// through the other; a probe started through one streams its events
// through the other to done; the limit on probes at once holds across
// both; and a probe cancelled through the second stops on the first.
func TestReplicasShareOneDatabase(t *testing.T) {
	cleanServeEnv(t)
	db := pgtest.DSN(t)
	env := []string{"PLANNER_PROBE_MAX_RUNNING=1", "PLANNER_PROBE_LEASE=" + replicaLease.String()}
	one, two := startChild(t, db, env...), startChild(t, db, env...)
	for _, c := range []*child{one, two} {
		if status, b := jsonCall(t, http.MethodGet, c.url+"/readyz", nil); status != http.StatusOK {
			t.Fatalf("/readyz: %d %s", status, b)
		}
	}

	status, b := jsonCall(t, http.MethodPost, one.url+"/v1/plans", map[string]any{"save": true, "name": "shared", "scenario": smallScenario()})
	var saved struct {
		ID string `json:"id"`
	}
	if status != http.StatusOK || json.Unmarshal(b, &saved) != nil || saved.ID == "" {
		t.Fatalf("save the plan: %d %.300s", status, b)
	}
	_, viaOne := jsonCall(t, http.MethodGet, one.url+"/v1/plans/"+saved.ID, nil)
	status, viaTwo := jsonCall(t, http.MethodGet, two.url+"/v1/plans/"+saved.ID, nil)
	if status != http.StatusOK || !bytes.Equal(viaOne, viaTwo) {
		t.Fatalf("the plan through the second: %d\n%.300s\nthrough the first\n%.300s", status, viaTwo, viaOne)
	}
	if status, b := jsonCall(t, http.MethodGet, two.url+"/v1/plans/"+saved.ID+"/report", nil); status != http.StatusOK {
		t.Fatalf("the plan's report through the second: %d %.300s", status, b)
	}

	quick, _ := countingSim(t, fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 20 * time.Millisecond, ITL: 2 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	id := startProbeAt(t, one.url, probeBodyFor(quick, []int{1, 2}, 42))
	s := <-followEvents(t, two.url+"/v1/probes/"+id+"/events")
	var done probeView
	if len(s.names) == 0 || s.names[len(s.names)-1] != "done" || json.Unmarshal([]byte(s.last), &done) != nil || done.Status != "succeeded" ||
		!slices.Contains(s.names, "step") || !slices.Contains(s.names, "status") {
		t.Fatalf("the probe's events through the second: %v, last %.300s", s.names, s.last)
	}
	if status, b := jsonCall(t, http.MethodGet, two.url+"/v1/records/"+id, nil); status != http.StatusOK {
		t.Fatalf("the probe's record card through the second: %d %.300s", status, b)
	}

	slow, chats := countingSim(t, fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	long := startProbeAt(t, one.url, longProbe(slow))
	if status, b := jsonCall(t, http.MethodPost, two.url+"/v1/probes", longProbe(slow)); status != http.StatusTooManyRequests {
		t.Fatalf("a second probe through the second replica beside the first's: %d %s", status, b)
	}
	followed := followEvents(t, two.url+"/v1/probes/"+long+"/events")
	waitProbe(t, two.url, long, func(p probeView) bool { return p.Counts.Records >= 2 })
	status, b = jsonCall(t, http.MethodDelete, two.url+"/v1/probes/"+long, nil)
	var cancelled probeView
	if status != http.StatusOK || json.Unmarshal(b, &cancelled) != nil || cancelled.Status != "cancelled" {
		t.Fatalf("cancel through the second: %d %s", status, b)
	}
	// The first replica recorded the end after its requests stopped.
	sent := chats.Load()
	if p := getProbe(t, one.url, long); p.Status != "cancelled" {
		t.Fatalf("the probe on the first: %+v", p)
	}
	s = <-followed
	if s.names[len(s.names)-1] != "done" || !strings.Contains(s.last, `"status":"cancelled"`) {
		t.Fatalf("the cancelled probe's events through the second: %v %.200s", s.names, s.last)
	}
	next := startProbeAt(t, two.url, probeBodyFor(slow, []int{1}, 41))
	if status, b := jsonCall(t, http.MethodDelete, one.url+"/v1/probes/"+next, nil); status != http.StatusOK {
		t.Fatalf("cancel through the first of the second's probe: %d %s", status, b)
	}
	if got := getProbe(t, one.url, long); got.Counts.Records != cancelled.Counts.Records {
		t.Errorf("the cancelled probe wrote rows after it ended: %d, then %d", cancelled.Counts.Records, got.Counts.Records)
	}
	t.Logf("%d chat requests when the cancelled probe ended, %d now", sent, chats.Load())
	stopChild(t, one)
	stopChild(t, two)
}

// TestKillReplicaRunningProbe kills with SIGKILL the replica that runs a
// probe: the other marks it interrupted once its lease has expired, its
// rows so far kept, and its stream through the other ends with it.
func TestKillReplicaRunningProbe(t *testing.T) {
	cleanServeEnv(t)
	db := pgtest.DSN(t)
	env := []string{"PLANNER_PROBE_MAX_RUNNING=1", "PLANNER_PROBE_LEASE=" + replicaLease.String()}
	one, two := startChild(t, db, env...), startChild(t, db, env...)
	id := startProbeAt(t, one.url, longProbe(slowSimURL(t)))
	before := waitProbe(t, two.url, id, func(p probeView) bool { return p.Counts.Records >= 3 })
	followed := followEvents(t, two.url+"/v1/probes/"+id+"/events")
	killed := time.Now()
	if err := one.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = one.cmd.Wait()
	s := <-followed
	took := time.Since(killed)
	if s.names[len(s.names)-1] != "done" || !strings.Contains(s.last, `"status":"interrupted"`) {
		t.Fatalf("the stream through the other: %v %.300s", s.names, s.last)
	}
	// The lease was renewed at most a third of it before the kill; the
	// other replica looks when it expires.
	if took > replicaLease+3*time.Second {
		t.Errorf("interrupted %v after the kill, with a lease of %v", took, replicaLease)
	}
	p := getProbe(t, two.url, id)
	if p.Status != "interrupted" || p.Counts.Records < before.Counts.Records {
		t.Fatalf("after the kill: %+v, %d rows before", p, before.Counts.Records)
	}
	status, b := jsonCall(t, http.MethodGet, two.url+"/v1/probes/"+id+"/requests.csv", nil)
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if status != http.StatusOK || err != nil || len(rows)-1 != p.Counts.Records {
		t.Fatalf("requests.csv: %d, %d rows (%v), %d counted", status, len(rows)-1, err, p.Counts.Records)
	}
	t.Logf("interrupted %v after the kill; %d rows before it, %d kept", took, before.Counts.Records, p.Counts.Records)
	next := startProbeAt(t, two.url, longProbe(slowSimURL(t)))
	if status, b := jsonCall(t, http.MethodDelete, two.url+"/v1/probes/"+next, nil); status != http.StatusOK {
		t.Fatalf("cancel: %d %s", status, b)
	}
	stopChild(t, two)
}

// TestRepeatedKillsLoseNoSave saves plans without a pause while the
// service is killed with SIGKILL, again and again: every plan whose save
// was acknowledged reads back afterwards.
func TestRepeatedKillsLoseNoSave(t *testing.T) {
	cleanServeEnv(t)
	eachDB(t, func(t *testing.T, db string, env []string) {
		var acked []string
		for round := range 3 {
			c := startChild(t, db, env...)
			var mu sync.Mutex
			ackedNow := 0
			enough := make(chan struct{})
			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				for {
					status, _, b := callQuiet(http.MethodPost, c.url+"/v1/plans", map[string]any{"save": true, "name": "kill", "scenario": smallScenario()})
					if status != http.StatusOK {
						return // the service is gone
					}
					var saved struct {
						ID string `json:"id"`
					}
					if json.Unmarshal(b, &saved) != nil || saved.ID == "" {
						t.Errorf("round %d: an answer without an id: %s", round, b)
						return
					}
					mu.Lock()
					acked = append(acked, saved.ID)
					ackedNow++
					if ackedNow == 10 {
						close(enough)
					}
					mu.Unlock()
				}
			}()
			<-enough
			if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = c.cmd.Wait()
			<-stopped
		}
		c := startChild(t, db, env...)
		for _, id := range acked {
			if status, b := jsonCall(t, http.MethodGet, c.url+"/v1/plans/"+id, nil); status != http.StatusOK {
				t.Fatalf("acknowledged plan %s after the kills: %d %.200s", id, status, b)
			}
		}
		t.Logf("%d acknowledged saves over 3 kills, all there", len(acked))
		stopChild(t, c)
	})
}

// smallScenario is a scenario that plans at once.
func smallScenario() map[string]any {
	return map[string]any{
		"quotas":  []any{map[string]any{"name": "k", "rpm": 100000}},
		"latency": map[string]any{"ttft_ms": map[string]any{"fixed": 100}, "tpot_ms": map[string]any{"fixed": 10}, "knee": 4},
		"classes": []any{map[string]any{"name": "jobs", "quota": "k", "mode": "batch", "input_tokens": map[string]any{"fixed": 64},
			"output_tokens": map[string]any{"fixed": 8}, "max_tokens": 8}},
	}
}

// callQuiet sends a JSON request; a failed connection is status 0.
func callQuiet(method, url string, body any) (int, http.Header, []byte) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, nil
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(b))
	if err != nil {
		return 0, nil, nil
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	if _, err := out.ReadFrom(resp.Body); err != nil {
		return 0, nil, nil
	}
	return resp.StatusCode, resp.Header, out.Bytes()
}

// TestServeUnreachableDatabase: a PostgreSQL database that does not
// answer stops the service at start, the cause named and the password in
// its URL nowhere in what it prints.
func TestServeUnreachableDatabase(t *testing.T) {
	cleanServeEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const secret = "Sup3r-secret-pw"
	code, out, errOut := runBriefly("serve", "--listen", "127.0.0.1:0", "--db", "postgres://planner:"+secret+"@"+addr+"/planner")
	if code != exitError || strings.Contains(out, "serving on") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"postgres://planner@" + addr + "/planner", "cannot reach the database", "connect"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the message lacks %q: %s", want, errOut)
		}
	}
	if strings.Contains(out+errOut, secret) {
		t.Errorf("the password shows: %s%s", out, errOut)
	}
}
