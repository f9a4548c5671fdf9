package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
	"github.com/plannerdev/planner/internal/store"
)

// TestBuildAndStoreMetrics: planner_build_info is 1 with the Go version
// this binary was built with; every operation of the API on its store is
// counted by its result; simulations are counted with their time and
// events.
func TestBuildAndStoreMetrics(t *testing.T) {
	s := newServer(t, Options{})
	saved := send(s, http.MethodPost, "/v1/plans", []byte(`{"save":true,"scenario":`+runawayFree+`}`))
	id := strings.TrimPrefix(saved.Header().Get("Location"), "/v1/plans/")
	send(s, http.MethodGet, "/v1/plans/"+id, nil)
	send(s, http.MethodGet, "/v1/plans/nope", nil)
	send(s, http.MethodGet, "/v1/plans?cursor=nonsense", nil)
	sim := send(s, http.MethodPost, "/v1/simulations", []byte(`{"scenario":`+runawayFree+`,"duration_s":60}`))
	if saved.Code != http.StatusOK || sim.Code != http.StatusOK {
		t.Fatalf("save %d, simulate %d", saved.Code, sim.Code)
	}
	var r SimulationResponse
	if err := json.Unmarshal(sim.Body.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		got, want float64
		what      string
	}{
		{testutil.ToFloat64(s.metrics.storeOps.WithLabelValues("save_plan", "ok")), 1, "save_plan ok"},
		{testutil.ToFloat64(s.metrics.storeOps.WithLabelValues("get_plan", "ok")), 1, "get_plan ok"},
		{testutil.ToFloat64(s.metrics.storeOps.WithLabelValues("get_plan", "not_found")), 1, "get_plan not_found"},
		{testutil.ToFloat64(s.metrics.storeOps.WithLabelValues("list_plans", "invalid")), 1, "list_plans invalid (a bad cursor)"},
		{testutil.ToFloat64(s.metrics.simulations.WithLabelValues("completed")), 1, "simulations completed"},
		{testutil.ToFloat64(s.metrics.simulatedEvents), float64(r.Settings.Events), "simulated events"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	if r.Settings.Events < 1 {
		t.Errorf("the simulation processed %d events", r.Settings.Events)
	}
	body := send(s, http.MethodGet, "/metrics", nil).Body.String()
	for _, want := range []string{
		`planner_build_info{goversion="` + runtime.Version() + `",revision="",version="(devel)"} 1`,
		`planner_simulation_duration_seconds_count 1`,
		`planner_jobs_running{kind="probe"} 0`,
		`planner_jobs_running{kind="validation"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestProbeJobMetrics: a probe is counted as running while it runs and,
// once it ends, by its outcome with the requests it sent and the 429s it
// got as the store counted its rows; the stream of its events is timed
// apart from the request latencies.
func TestProbeJobMetrics(t *testing.T) {
	env := newProbeEnv(t, Options{})
	sim := newSim(t, fastSim)
	id := startProbe(t, env, probeBody(sim.url, []int{1, 2}, 42))
	readEvents(t, env.url+"/v1/probes/"+id+"/events") // until the probe's done event
	m := env.api.metrics
	running := m.jobsRunning.WithLabelValues(kindProbe)
	// The count follows the job's end from its own goroutine.
	for deadline := time.Now().Add(30 * time.Second); testutil.ToFloat64(running) != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the probe is still counted as running")
		}
	}
	p := waitProbe(t, env, id, ended)
	if got := testutil.ToFloat64(m.jobsFinished.WithLabelValues(kindProbe, p.Status)); got != 1 {
		t.Errorf("finished{probe,%s} = %v", p.Status, got)
	}
	if got := testutil.ToFloat64(m.jobRequests.WithLabelValues(kindProbe)); got != float64(p.Counts.Records) || got < 84 {
		t.Errorf("probe requests %v, the probe's rows %d (at least 2 × 42)", got, p.Counts.Records)
	}
	if got := testutil.ToFloat64(m.jobRateLimited.WithLabelValues(kindProbe)); got != float64(p.Counts.RateLimited) {
		t.Errorf("probe 429s %v, the probe's %d", got, p.Counts.RateLimited)
	}
	if n := testutil.CollectAndCount(m.streams, "planner_http_stream_duration_seconds"); n != 1 {
		t.Errorf("%d stream series, want 1 (the events)", n)
	}
	for _, name := range []string{"get-probe-events"} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(name, "2xx")); got != 1 {
			t.Errorf("requests{%s} = %v", name, got)
		}
	}
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "planner_http_request_duration_seconds" {
			continue
		}
		for _, series := range f.GetMetric() {
			for _, l := range series.GetLabel() {
				if l.GetName() == "operation" && streamOperations[l.GetValue()] {
					t.Errorf("the events stream is in the request latency histogram")
				}
			}
		}
	}
}

// TestMetricsPassPromtool scrapes /metrics after traffic of every kind
// (plans, a what-if, a simulation, a shed request, store operations, a
// probe with its events) and checks the scrape with promtool check
// metrics, Prometheus's own linter. It needs promtool: .ci/run installs
// Debian's prometheus package when it is missing and sets
// PLANNER_REQUIRE_PROMTOOL=1, so that it cannot skip there; elsewhere it
// skips, saying so. PLANNER_METRICS_SCRAPE, when set, names a file that
// gets the scrape.
func TestMetricsPassPromtool(t *testing.T) {
	skip := t.Skipf
	if os.Getenv("PLANNER_REQUIRE_PROMTOOL") == "1" {
		skip = t.Fatalf
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		skip("promtool is not installed (Debian's prometheus package has it): %v", err)
	}
	env := newProbeEnv(t, Options{})
	sim := newSim(t, fastSim)
	id := startProbe(t, env, probeBody(sim.url, []int{1}, 41))
	readEvents(t, env.url+"/v1/probes/"+id+"/events")
	waitProbe(t, env, id, ended)
	for _, r := range []struct{ path, body string }{
		{"/v1/plans", `{"save":true,"scenario":` + runawayFree + `}`},
		{"/v1/plans", `{"scenario":{}}`},
		{"/v1/what-if", `{"scenario":` + runawayFree + `,"variations":[{"path":"/quotas/0/rpm","values":[600,1200]}]}`},
		{"/v1/simulations", `{"scenario":` + runawayFree + `,"duration_s":60}`},
	} {
		call(t, http.MethodPost, env.url+r.path, json.RawMessage(r.body))
	}
	call(t, http.MethodGet, env.url+"/v1/plans/nope", nil)
	call(t, http.MethodGet, env.url+"/readyz", nil)
	// One shed request: every slot held, and as many waiting as may.
	ctx, release := context.WithCancel(context.Background())
	done := make(chan struct{})
	for range 3 * runtime.NumCPU() {
		go func() {
			_ = env.api.engine.Run(ctx, func(ctx context.Context) error { <-ctx.Done(); return nil })
			done <- struct{}{}
		}()
	}
	for env.api.engine.Running() < runtime.NumCPU() || env.api.engine.Waiting() < 2*runtime.NumCPU() {
		runtime.Gosched()
	}
	if status, _, b := call(t, http.MethodPost, env.url+"/v1/plans", json.RawMessage(`{"scenario":`+strings.Replace(runawayFree, "600", "601", 1)+`}`)); status != http.StatusServiceUnavailable {
		t.Errorf("a request with every slot busy: %d %s", status, b)
	}
	release()
	for range 3 * runtime.NumCPU() {
		<-done
	}

	status, _, scrape := call(t, http.MethodGet, env.url+"/metrics", nil)
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d", status)
	}
	for _, want := range []string{"planner_build_info{", `status_class="shed"`, `planner_jobs_finished_total{kind="probe"`,
		"planner_http_stream_duration_seconds_bucket", `planner_store_operations_total{operation="get_plan",result="not_found"} 1`} {
		if !bytes.Contains(scrape, []byte(want)) {
			t.Errorf("the scrape lacks %q", want)
		}
	}
	if file := os.Getenv("PLANNER_METRICS_SCRAPE"); file != "" {
		if err := os.WriteFile(file, scrape, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A bound on the child process, not a measurement.
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(scrape)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	var lines []string
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		lines = append(lines, sc.Text())
	}
	if len(lines) > 0 {
		t.Errorf("promtool check metrics finds problems:\n%s", strings.Join(lines, "\n"))
	}
	t.Logf("promtool check metrics passes %d bytes of metrics (%s)", len(scrape), filepath.Base(promtool))
}

// TestOutcomeNames: how a simulation ended and what a store operation
// gave are named by the errors the engine and the store return, wrapped
// or not.
func TestOutcomeNames(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("context: %w", err) }
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, "completed"},
		{wrap(plan.ErrBusy), "shed"},
		{wrap(context.DeadlineExceeded), "stopped"},
		{plan.ErrClosed, "stopped"},
		{wrap(scenario.Errors{{Path: "quotas", Message: "give at least one quota"}}), "invalid"},
		{simulate.OptionErrors{{Path: "duration_s", Message: "too long"}}, "invalid"},
		{errors.New("boom"), "error"},
	} {
		if got := simulationOutcome(tc.err); got != tc.want {
			t.Errorf("simulationOutcome(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{wrap(store.ErrNotFound), "not_found"},
		{store.ErrBadCursor, "invalid"},
		{wrap(&store.TooLargeError{What: "plan", Bytes: 2, Limit: 1}), "too_large"},
		{wrap(store.ErrFull), "full"},
		{wrap(store.ErrGone), "unavailable"},
		{context.Canceled, "cancelled"},
		{errors.New("disk I/O error"), "error"},
	} {
		if got := storeResult(tc.err); got != tc.want {
			t.Errorf("storeResult(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
