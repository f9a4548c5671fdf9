package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/store"
	"github.com/plannerdev/planner/internal/testutil"
)

// cleanServeEnv keeps the machine's PLANNER_* variables out of a test.
func cleanServeEnv(t *testing.T) {
	t.Helper()
	for _, name := range []string{"CONFIG", "LISTEN", "DB", "AUTH_TOKENS", "LIMITS_MAX_BODY_BYTES", "ALLOWED_HOSTS", "ALLOWED_ORIGINS"} {
		t.Setenv("PLANNER_"+name, "")
	}
}

// running is a `planner serve` started by startServe.
type running struct {
	url    string
	out    *addrWriter
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
	r := &running{out: &addrWriter{found: make(chan string, 1)}, errOut: &testutil.SyncBuffer{}, stop: cancel, code: make(chan int, 1)}
	go func() { r.code <- run(ctx, args, strings.NewReader(""), r.out, r.errOut) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.code:
		case <-time.After(time.Minute):
			t.Error("serve did not stop")
		}
	})
	select {
	case addr := <-r.out.found:
		if !servingLine.MatchString(r.out.String()) {
			t.Fatalf("serve printed %q", r.out)
		}
		r.url = "http://" + addr
		return r
	case code := <-r.code:
		r.code <- code // for the cleanup
		t.Fatalf("serve exited with %d: %s%s", code, r.out, r.errOut)
	case <-time.After(30 * time.Second):
		t.Fatalf("serve printed no address: %s", r.out)
	}
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

// TestServeStopsComputationsInFlight stops the server while a what-if is
// in flight: the computation is stopped and the request answered 503 (the
// server is shutting down), then the command exits 0.
func TestServeStopsComputationsInFlight(t *testing.T) {
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
	// With Expect: 100-continue the body waits for the server's 100
	// Continue, which it sends when the handler starts reading the body:
	// from then on the request is in flight on the server.
	reading := make(chan struct{})
	go func() {
		trace := &httptrace.ClientTrace{Got100Continue: func() { close(reading) }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost, r.url+"/v1/what-if", bytes.NewReader(body))
		if err != nil {
			done <- answer{err: err}
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Expect", "100-continue")
		client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
		resp, err := client.Do(req)
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
	case <-reading:
	case a := <-done:
		t.Fatalf("the request ended before the server read it: %+v", a)
	}
	r.stop()
	a := <-done
	if a.status != http.StatusServiceUnavailable || a.cells != 0 {
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

// runBriefly runs the command line, stopping it after 30 s if it has not
// ended by itself: for commands that must fail at once.
func runBriefly(args ...string) (code int, stdout, stderr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut testutil.SyncBuffer
	code = run(ctx, args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestServeTwiceOnOneStore starts a second service on the store file of a
// running one: it exits 1 at once, naming the file and the process that
// holds it, and the first goes on serving. Once the first has stopped,
// the file is free.
func TestServeTwiceOnOneStore(t *testing.T) {
	cleanServeEnv(t)
	db := filepath.Join(t.TempDir(), "planner.db")
	first := startServe(t, "serve", "--listen", "127.0.0.1:0", "--db", db)
	code, out, errOut := runBriefly("serve", "--listen", "127.0.0.1:0", "--db", db)
	if code != exitError || strings.Contains(out, "serving on") {
		t.Fatalf("the second service: exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"the store " + db + " is in use by another process", fmt.Sprintf("(pid %d)", os.Getpid()), "--db"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the message lacks %q: %s", want, errOut)
		}
	}
	if code, _ := get(t, first.url+"/readyz"); code != http.StatusOK {
		t.Errorf("the first service after the second was refused: /readyz %d", code)
	}
	first.stop()
	if code := first.wait(t); code != exitOK {
		t.Fatalf("exit %d: %s", code, first.errOut)
	}
	again := startServe(t, "serve", "--listen", "127.0.0.1:0", "--db", db)
	again.stop()
	if code := again.wait(t); code != exitOK {
		t.Fatalf("a service on the freed file: exit %d: %s", code, again.errOut)
	}
}

// elsewhere is a listener that reports the address a name resolved to
// while it really listens on loopback: "localhost" resolving to a
// non-loopback address, without sending anything anywhere.
type elsewhere struct {
	net.Listener
	addr net.Addr
}

func (e elsewhere) Addr() net.Addr { return e.addr }

// TestServeJudgesLoopbackOnTheBoundAddress listens on "localhost" that
// resolves to a non-loopback address: without tokens the service refuses
// to serve, naming what it bound, and frees the listener and the store;
// with tokens it serves and asks for them.
func TestServeJudgesLoopbackOnTheBoundAddress(t *testing.T) {
	cleanServeEnv(t)
	db := filepath.Join(t.TempDir(), "planner.db")
	t.Setenv("PLANNER_LISTEN", "localhost:8080")
	t.Setenv("PLANNER_DB", db)
	var lns []net.Listener
	listen := func(network, address string) (net.Listener, error) {
		if address != "localhost:8080" {
			t.Errorf("asked to listen on %s", address)
		}
		ln, err := net.Listen(network, "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		return elsewhere{Listener: ln, addr: &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 8080}}, nil
	}
	var out, errOut testutil.SyncBuffer
	err := serveOn(context.Background(), streams{in: strings.NewReader(""), out: &out, err: &errOut}, nil, &output{format: "text"}, listen)
	if err == nil || !strings.Contains(err.Error(), "listen address localhost:8080 is bound to 192.0.2.10:8080, which is not a loopback address") ||
		!strings.Contains(err.Error(), "auth.tokens") || strings.Contains(out.String(), "serving on") {
		t.Fatalf("serve on localhost resolving elsewhere, without tokens: %v; %s", err, out.String())
	}
	if _, err := lns[0].Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the listener was left open: %v", err)
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatalf("the store was left locked: %v", err)
	}
	st.Close()

	const token = "a-token-of-enough-length"
	t.Setenv("PLANNER_AUTH_TOKENS", token)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- serveOn(ctx, streams{in: strings.NewReader(""), out: &out, err: &errOut}, nil, &output{format: "text"}, listen)
	}()
	for !strings.Contains(out.String(), "serving on") {
		select {
		case err := <-served:
			t.Fatalf("with tokens: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	url := "http://" + lns[1].Addr().String()
	if code, _ := get(t, url+"/v1/tiers"); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d", code)
	}
	if status, _, _ := testutil.CallJSON(t, http.MethodGet, url+"/v1/tiers", nil, "Authorization", "Bearer "+token); status != http.StatusOK {
		t.Errorf("with the token: %d", status)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// TestServeRefusesCrossSiteRequests sends what a page on another site
// could make a browser send to the service on an ephemeral loopback port,
// as in the report of the attack: a probe request without a Content-Type,
// from a foreign Origin, naming a foreign Host. Each of the three is
// refused on its own, and the target hears nothing. The service's own
// page, by its address or by localhost, is answered.
func TestServeRefusesCrossSiteRequests(t *testing.T) {
	cleanServeEnv(t)
	r := startServe(t, "serve", "--listen", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "planner.db"))
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(target.Close)
	body := `{"target":{"base_url":"` + target.URL + `/v1","model":"m"},"steps":[1],"requests_per_step":3}`
	hostport := strings.TrimPrefix(r.url, "http://")
	port := hostport[strings.LastIndex(hostport, ":")+1:]
	send := func(method, path, body, host string, header ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, r.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body == "" {
			req.Body = http.NoBody
		}
		req.Host = host
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name   string
		host   string
		header []string
		want   int
		at     string
	}{
		{"the attack", "evil.example:" + port, []string{"Origin", "https://evil.example"}, http.StatusForbidden, "header.Host"},
		{"no Content-Type", hostport, nil, http.StatusUnsupportedMediaType, "header.Content-Type"},
		{"text/plain", hostport, []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType, "header.Content-Type"},
		{"a foreign Origin", hostport, []string{"Content-Type", "application/json", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, "header.Origin"},
		{"a foreign Host (DNS rebinding)", "evil.example:" + port, []string{"Content-Type", "application/json", "Origin", "http://evil.example:" + port, "Sec-Fetch-Site", "same-origin"}, http.StatusForbidden, "header.Host"},
	} {
		status, b := send(http.MethodPost, "/v1/probes", body, tc.host, tc.header...)
		if status != tc.want || !strings.Contains(b, `"location":"`+tc.at+`"`) {
			t.Errorf("%s: %d %s; want %d at %s", tc.name, status, b, tc.want, tc.at)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("refused requests reached the target %d times", n)
	}
	text, _ := planner.Example("chat")
	js, err := yaml.YAMLToJSON(text)
	if err != nil {
		t.Fatal(err)
	}
	plan := `{"scenario":` + string(js) + `}`
	for _, host := range []string{hostport, "localhost:" + port} {
		origin := "http://" + host
		if status, b := send(http.MethodGet, "/", "", host); status != http.StatusOK {
			t.Errorf("the page at %s: %d %.200s", origin, status, b)
		}
		if status, b := send(http.MethodPost, "/v1/plans", plan, host, "Content-Type", "application/json", "Origin", origin, "Sec-Fetch-Site", "same-origin"); status != http.StatusOK {
			t.Errorf("the page's own call at %s: %d %.300s", origin, status, b)
		}
	}
}
