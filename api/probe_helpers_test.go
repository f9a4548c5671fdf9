package api

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/jobs"
	"github.com/plannerdev/planner/internal/store"
	"github.com/plannerdev/planner/internal/target"
	"github.com/plannerdev/planner/internal/testutil"
)

// probeEnv is an API with a file store and a job manager on a real
// loopback listener, its log captured.
type probeEnv struct {
	url  string
	api  *Server
	st   *store.Store
	jobs *jobs.Manager
	logs *testutil.SyncBuffer
	db   string
}

// newProbeEnv starts the API; opts.Store, Jobs and Logger are set here.
func newProbeEnv(t *testing.T, opts Options) *probeEnv {
	t.Helper()
	env := &probeEnv{logs: &testutil.SyncBuffer{}, db: t.TempDir() + "/planner.db"}
	st, err := store.Open(context.Background(), env.db)
	if err != nil {
		t.Fatal(err)
	}
	env.st = st
	logger := slog.New(slog.NewJSONHandler(env.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	maxRunning := opts.Probe.MaxRunning
	env.jobs = jobs.New(st, jobs.Options{MaxRunning: maxRunning, Logger: logger, ProgressInterval: 50 * time.Millisecond})
	opts.Store, opts.Jobs, opts.Logger = st, env.jobs, logger
	if opts.Tiers == nil {
		opts.Tiers = testTiers
	}
	env.api = newChecked(t, opts)
	srv := httptest.NewServer(env.api)
	env.url = srv.URL
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := env.jobs.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		srv.Close()
		st.Close()
	})
	return env
}

// simServer serves a simulator on loopback and counts its chat requests.
type simServer struct {
	url   string // the API root, .../v1
	sim   *fakeendpoint.Server
	chats atomic.Int64
	auth  atomic.Value // the last Authorization header received
}

func newSim(t *testing.T, cfg fakeendpoint.Config) *simServer {
	t.Helper()
	s, err := fakeendpoint.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ss := &simServer{sim: s}
	ss.auth.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			ss.chats.Add(1)
		}
		if a := r.Header.Get("Authorization"); a != "" {
			ss.auth.Store(a)
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ss.url = srv.URL + "/v1"
	return ss
}

// Simulator speeds: fast answers in about 15 ms, slow in about 200 ms.
var (
	fastSim = fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 5 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth}
	slowSim = fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth}
	// midSim answers in about 22 ms: a step of the least size a probe
	// accepts (41 to 44 requests at concurrency 1 to 4) lasts about a second.
	midSim = fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 15 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth}
)

// call sends a JSON request and returns the status, headers and body.
func call(t *testing.T, method, url string, body any, header ...string) (int, http.Header, []byte) {
	t.Helper()
	return testutil.CallJSON(t, method, url, body, header...)
}

// decode unmarshals a JSON body or fails the test.
func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not the expected JSON (%v): %.500s", err, b)
	}
	return v
}

// probeBody is a small probe request against url.
func probeBody(url string, steps []int, n int) map[string]any {
	return map[string]any{
		"target": map[string]any{"base_url": url, "model": fakeendpoint.DefaultModel},
		"steps":  steps, "requests_per_step": n, "max_tokens": 8, "ignore_eos": true, "input_tokens": 32, "pause_ms": 0,
	}
}

// startProbe starts a probe and returns its id.
func startProbe(t *testing.T, env *probeEnv, body map[string]any, header ...string) string {
	t.Helper()
	status, h, b := call(t, http.MethodPost, env.url+"/v1/probes", body, header...)
	if status != http.StatusAccepted {
		t.Fatalf("start a probe: %d %s", status, b)
	}
	p := decode[Probe](t, b)
	if h.Get("Location") != "/v1/probes/"+p.ID || p.Status != "queued" {
		t.Fatalf("Location %q, probe %+v", h.Get("Location"), p)
	}
	return p.ID
}

// waitProbe waits until cond holds of the probe as GET returns it: it
// checks at once, then after every event of the probe's event stream,
// which ends with the probe (its done event).
func waitProbe(t *testing.T, env *probeEnv, id string, cond func(Probe) bool) Probe {
	t.Helper()
	get := func() Probe {
		status, _, b := call(t, http.MethodGet, env.url+"/v1/probes/"+id, nil)
		if status != http.StatusOK {
			t.Fatalf("get probe: %d %s", status, b)
		}
		return decode[Probe](t, b)
	}
	var p Probe
	if !testutil.UntilEvents(t, env.url+"/v1/probes/"+id+"/events", func() bool { p = get(); return cond(p) }) {
		t.Fatalf("probe %s: the condition does not hold when it has ended: %+v", id, p)
	}
	return p
}

func ended(p Probe) bool { return store.Status(p.Status).Ended() }

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data string
}

// readEvents reads a server-sent event stream until it ends.
func readEvents(t *testing.T, url string) []sseEvent {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("events: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var evs []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" {
				evs = append(evs, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// fakeResolver maps names to addresses; a name it does not know does not
// resolve. It counts its lookups.
type fakeResolver struct {
	mu      sync.Mutex
	names   map[string][]string
	lookups int
	// after, when set, answers every lookup from the n-th on.
	after     map[string][]string
	afterFrom int
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	names := f.names
	if f.after != nil && f.lookups >= f.afterFrom {
		names = f.after
	}
	addrs, ok := names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		out[i] = netip.MustParseAddr(a)
	}
	return out, nil
}

// countingDialer counts the connections attempted.
type countingDialer struct{ n atomic.Int64 }

func (d *countingDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d.n.Add(1)
	var nd net.Dialer
	return nd.DialContext(ctx, network, address)
}

// network is a test network: a resolver and a dialer that count.
func network(names map[string][]string) (target.Network, *fakeResolver, *countingDialer) {
	r := &fakeResolver{names: names}
	d := &countingDialer{}
	return target.Network{Resolver: r, Dialer: d}, r, d
}

// smallCaps is a probe section with low caps, for the cap tests.
func smallCaps() config.Probe {
	p := config.DefaultProbe()
	p.MaxConcurrency, p.MaxRequests, p.MaxTokens, p.MaxDuration, p.MaxRunning = 8, 100, 10000, time.Minute, 1
	return p
}
