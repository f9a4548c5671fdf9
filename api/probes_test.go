package api

import (
	"encoding/csv"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/report/reportcheck"
)

// TestProbeLifecycle starts probes against the simulator and reads
// everything a finished probe offers: the resource, the list with paging,
// requests.csv, both charts and the record cards.
func TestProbeLifecycle(t *testing.T) {
	env := newProbeEnv(t, Options{})
	// About 64 ms a request: long beside the milliseconds a request can
	// wait for a core while other tests run, so that each step's gain
	// over the one before (twice the throughput on 64 slots) stays far
	// above the 10 % a step must show, on the real clock this test runs on.
	s := newSim(t, fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 50 * time.Millisecond, ITL: 2 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	body := probeBody(s.url, []int{1, 2, 4}, 44)
	body["label"] = "first"
	first := startProbe(t, env, body)
	p := waitProbe(t, env, first, ended)
	if p.Status != "succeeded" || p.Label != "first" || len(p.Steps) != 3 || p.Knee == nil || p.StopReason != "completed" ||
		p.Counts.Records < 132 || p.Counts.OK != p.Counts.Records || p.Latency == nil || len(p.Latency.Curve) != 3 || p.StartedAt == nil || p.FinishedAt == nil {
		t.Fatalf("finished probe %+v", p)
	}
	// 44 requests a step, or 88 for a step whose gain lay within its noise
	// of the threshold (measured twice as long), as timing on a loaded
	// machine may make one.
	if n := p.Counts.Records; n < 132 || n > 264 || (n-132)%44 != 0 {
		t.Errorf("%d rows, want 44 or 88 a step", n)
	}
	if p.Target.BaseURL != s.url || p.Config["api_key_set"] != false || p.Config["requests_per_step"] != float64(44) {
		t.Errorf("target %+v, config %v", p.Target, p.Config)
	}
	// The seed drawn for a probe that gave none is below 2⁵³, so that a
	// JSON reader (this float64) reads it exactly.
	if seed, ok := p.Config["seed"].(float64); !ok || seed < 0 || seed >= 1<<53 {
		t.Errorf("config.seed %v, want a whole number below 2^53", p.Config["seed"])
	}
	// Every step passed on 64 slots: the knee, 4, is a lower bound in the
	// resource the page shows, in its latency block and on its card.
	if *p.Knee != 4 || !p.KneeLowerBound || !p.Latency.KneeLowerBound || *p.Latency.Knee != 4 {
		t.Errorf("knee %v, lower bound %v, latency %+v: want knee ≥ 4", *p.Knee, p.KneeLowerBound, p.Latency)
	}
	second := startProbe(t, env, probeBody(s.url, []int{1}, 41))
	waitProbe(t, env, second, ended)

	status, _, b := call(t, http.MethodGet, env.url+"/v1/probes?limit=1", nil)
	page := decode[ProbeList](t, b)
	if status != http.StatusOK || len(page.Items) != 1 || page.Items[0].ID != second || page.NextCursor == "" {
		t.Fatalf("first page: %d %s", status, b)
	}
	_, _, b = call(t, http.MethodGet, env.url+"/v1/probes?limit=1&cursor="+page.NextCursor, nil)
	page = decode[ProbeList](t, b)
	if len(page.Items) != 1 || page.Items[0].ID != first || page.NextCursor != "" || page.Items[0].Knee == nil || !page.Items[0].KneeLowerBound {
		t.Fatalf("second page: %s", b)
	}
	if status, _, b := call(t, http.MethodGet, env.url+"/v1/probes?cursor=nonsense", nil); status != http.StatusUnprocessableEntity || !strings.Contains(string(b), "query.cursor") {
		t.Errorf("bad cursor: %d %s", status, b)
	}

	status, h, b := call(t, http.MethodGet, env.url+"/v1/probes/"+first+"/requests.csv", nil)
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/csv") || err != nil || len(rows) != p.Counts.Records+1 || rows[0][0] != "step" {
		t.Fatalf("requests.csv: %d %s, %d rows, %v", status, h.Get("Content-Type"), len(rows), err)
	}
	for _, chart := range []string{"throughput", "latency"} {
		status, h, b := call(t, http.MethodGet, env.url+"/v1/probes/"+first+"/plot.svg?chart="+chart, nil)
		if status != http.StatusOK || h.Get("Content-Type") != "image/svg+xml" {
			t.Fatalf("%s chart: %d %s", chart, status, h.Get("Content-Type"))
		}
		if _, err := reportcheck.CheckSVG(b); err != nil {
			t.Errorf("%s chart: %v", chart, err)
		}
	}
	if status, _, _ := call(t, http.MethodGet, env.url+"/v1/probes/"+first+"/plot.svg?chart=pie", nil); status != http.StatusUnprocessableEntity {
		t.Errorf("unknown chart: %d", status)
	}

	status, _, b = call(t, http.MethodGet, env.url+"/v1/records", nil)
	cards := decode[RecordList](t, b)
	if status != http.StatusOK || len(cards.Items) != 2 || cards.Items[0].ProbeID != second || cards.Items[1].Knee == nil || cards.Items[1].Endpoint != s.url {
		t.Fatalf("records: %d %s", status, b)
	}
	status, h, b = call(t, http.MethodGet, env.url+"/v1/records?format=md", nil)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/markdown") || strings.Count(string(b), "# Record card") != 2 {
		t.Fatalf("records as Markdown: %d %s\n%s", status, h.Get("Content-Type"), b)
	}
	status, _, b = call(t, http.MethodGet, env.url+"/v1/records/"+first, nil)
	if card := decode[report.RecordCard](t, b); status != http.StatusOK || card.ProbeID != first || card.DeadlineMs != 12000 || len(card.Decisions) != 3 || !card.KneeLowerBound {
		t.Fatalf("record card: %d %s", status, b)
	}
	if status, _, b := call(t, http.MethodGet, env.url+"/v1/records/"+first+"?format=md", nil); status != http.StatusOK || !strings.Contains(string(b), "## What to do") {
		t.Fatalf("record card as Markdown: %d %s", status, b)
	}
	// markdown is md's other name, as for the command line's -o.
	for _, path := range []string{"/v1/records", "/v1/records/" + first} {
		_, _, short := call(t, http.MethodGet, env.url+path+"?format=md", nil)
		if status, _, long := call(t, http.MethodGet, env.url+path+"?format=markdown", nil); status != http.StatusOK || string(long) != string(short) {
			t.Errorf("%s?format=markdown: %d, not the answer to format=md:\n%s", path, status, long)
		}
	}

	for _, path := range []string{"/v1/probes/nope", "/v1/probes/nope/requests.csv", "/v1/probes/nope/plot.svg", "/v1/probes/nope/events", "/v1/records/nope"} {
		status, _, b := call(t, http.MethodGet, env.url+path, nil)
		if status != http.StatusNotFound || !strings.Contains(string(b), `"location":"path.`) {
			t.Errorf("%s: %d %s", path, status, b)
		}
	}
	if status, _, b := call(t, http.MethodDelete, env.url+"/v1/probes/"+first, nil); status != http.StatusConflict || !strings.Contains(string(b), "already ended (succeeded)") {
		t.Errorf("cancel a finished probe: %d %s", status, b)
	}
}

// TestProbeCancel cancels a running probe: it ends cancelled with the
// rows it measured; before that it has no record card and, before its
// first step, no chart.
func TestProbeCancel(t *testing.T) {
	env := newProbeEnv(t, Options{})
	s := newSim(t, slowSim)
	id := startProbe(t, env, probeBody(s.url, []int{1, 2}, 100))
	if status, _, b := call(t, http.MethodGet, env.url+"/v1/probes/"+id+"/plot.svg", nil); status != http.StatusNotFound || !strings.Contains(string(b), "no measured step") {
		t.Errorf("chart before any step: %d %s", status, b)
	}
	if status, _, b := call(t, http.MethodGet, env.url+"/v1/records/"+id, nil); status != http.StatusConflict {
		t.Errorf("record card of a running probe: %d %s", status, b)
	}
	waitProbe(t, env, id, func(p Probe) bool { return p.Counts.Records >= 2 })
	status, _, b := call(t, http.MethodDelete, env.url+"/v1/probes/"+id, nil)
	p := decode[Probe](t, b)
	if status != http.StatusOK || p.Status != "cancelled" || p.StopReason != "cancelled" || p.Counts.Records < 2 || p.Error == "" {
		t.Fatalf("cancel: %d %s", status, b)
	}
	if status, _, b := call(t, http.MethodDelete, env.url+"/v1/probes/"+id, nil); status != http.StatusConflict || !strings.Contains(string(b), "cancelled") {
		t.Errorf("second cancel: %d %s", status, b)
	}
	_, _, csvBody := call(t, http.MethodGet, env.url+"/v1/probes/"+id+"/requests.csv", nil)
	if n := strings.Count(string(csvBody), "\n") - 1; n != p.Counts.Records {
		t.Errorf("requests.csv has %d rows, the counts %d", n, p.Counts.Records)
	}
	// Cut short after a few of its 100 requests, the step never reached a
	// steady state: no knee, no chart and no record card.
	if p.Knee != nil || len(p.Steps) != 1 || !p.Steps[0].TooShort {
		t.Errorf("a step cut short: knee %v, steps %+v", p.Knee, p.Steps)
	}
	if status, _, b := call(t, http.MethodGet, env.url+"/v1/records/"+id, nil); status != http.StatusNotFound || !strings.Contains(string(b), "no measured step") {
		t.Errorf("record card of a probe cut short: %d %s", status, b)
	}
	if status, _, b := call(t, http.MethodGet, env.url+"/v1/probes/"+id+"/plot.svg", nil); status != http.StatusNotFound {
		t.Errorf("chart of a probe cut short: %d %s", status, b)
	}
}

// TestProbeCaps refuses probes beyond the configured caps with a 422 that
// names the field and the limit, and more than max_running at once with a
// 429 and Retry-After.
func TestProbeCaps(t *testing.T) {
	env := newProbeEnv(t, Options{Probe: smallCaps()})
	s := newSim(t, slowSim)
	for _, tc := range []struct {
		name     string
		edit     func(map[string]any)
		location string
		limit    string
	}{
		{"concurrency", func(b map[string]any) { b["steps"] = []int{1, 4, 16} }, "body.steps[2]", "probe.max_concurrency of 8"},
		{"requests per step", func(b map[string]any) { b["requests_per_step"] = 500 }, "body.requests_per_step", "probe.max_requests of 100"},
		{"request budget", func(b map[string]any) { b["budgets"] = map[string]any{"max_requests": 101} }, "body.budgets.max_requests", "probe.max_requests of 100"},
		{"token budget", func(b map[string]any) { b["budgets"] = map[string]any{"max_tokens": 20000} }, "body.budgets.max_tokens", "probe.max_tokens of 10000"},
		{"max tokens", func(b map[string]any) { b["max_tokens"] = 20000 }, "body.max_tokens", "probe.max_tokens of 10000"},
		{"duration", func(b map[string]any) { b["budgets"] = map[string]any{"max_duration_s": 61} }, "body.budgets.max_duration_s", "60 s (probe.max_duration)"},
		{"descending steps", func(b map[string]any) { b["steps"] = []int{2, 1} }, "body.steps[1]", "strictly ascending"},
		{"unknown credential", func(b map[string]any) { b["target"].(map[string]any)["credential"] = "nope" }, "body.target.credential", "the server has none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := probeBody(s.url, []int{1}, 41)
			tc.edit(body)
			status, _, b := call(t, http.MethodPost, env.url+"/v1/probes", body)
			if status != http.StatusUnprocessableEntity {
				t.Fatalf("status %d: %s", status, b)
			}
			p := decode[problem](t, b)
			found := false
			for _, e := range p.Errors {
				found = found || (e.Location == tc.location && strings.Contains(e.Message, tc.limit))
			}
			if !found {
				t.Fatalf("no error at %s naming %q: %s", tc.location, tc.limit, b)
			}
		})
	}
	if n := s.chats.Load(); n != 0 {
		t.Fatalf("refused probes sent %d requests", n)
	}
	running := startProbe(t, env, probeBody(s.url, []int{1}, 50))
	status, h, b := call(t, http.MethodPost, env.url+"/v1/probes", probeBody(s.url, []int{1}, 41))
	if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(string(b), "probe.max_running") {
		t.Fatalf("second probe beside max_running 1: %d Retry-After %q %s", status, h.Get("Retry-After"), b)
	}
	call(t, http.MethodDelete, env.url+"/v1/probes/"+running, nil)
	waitProbe(t, env, running, ended)
	id := startProbe(t, env, probeBody(s.url, []int{1}, 41))
	waitProbe(t, env, id, ended)
}

// TestForbiddenTargets refuses targets outside the allow-list with a 4xx
// at body.target.base_url before any request leaves: no connection is
// even attempted, and the simulator sees no chat request.
func TestForbiddenTargets(t *testing.T) {
	s := newSim(t, fastSim)
	port := s.url[strings.LastIndex(s.url, ":")+1 : strings.LastIndex(s.url, "/v1")]
	redirector := func(code int, to string) string {
		mux := http.NewServeMux()
		mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, to+r.URL.Path, code)
		})
		srv := newRedirector(t, mux)
		return srv + "/v1"
	}
	for _, tc := range []struct {
		name    string
		url     string
		names   map[string][]string
		message string
		dials   bool // whether a connection may be attempted (the preflight's)
	}{
		{name: "non-loopback address", url: "http://10.1.2.3:" + port + "/v1", message: "10.1.2.3:" + port + " is not in the probe allow-list"},
		{name: "public address", url: "http://93.184.216.34/v1", message: "is not in the probe allow-list"},
		{name: "name resolving outside", url: "http://sim.internal:" + port + "/v1", names: map[string][]string{"sim.internal": {"10.0.0.5"}},
			message: "resolves to 10.0.0.5, and neither the name nor that address"},
		{name: "name resolving to a mix", url: "http://mixed.internal:" + port + "/v1", names: map[string][]string{"mixed.internal": {"127.0.0.1", "10.0.0.6"}},
			message: "resolves to 10.0.0.6"},
		{name: "unresolvable name", url: "http://nowhere.internal:" + port + "/v1", message: "cannot resolve"},
		{name: "302 to a forbidden address", url: redirector(http.StatusFound, "http://10.9.9.9:"+port), dials: true,
			message: "302, a redirect to http://10.9.9.9:" + port + "/v1/models; redirects are refused"},
		{name: "307 to a forbidden address", url: redirector(http.StatusTemporaryRedirect, "http://169.254.169.254"), dials: true,
			message: "307, a redirect to http://169.254.169.254/v1/models"},
		{name: "user information", url: "http://user:secret@127.0.0.1:" + port + "/v1", message: "user information"},
		{name: "fragment", url: "http://127.0.0.1:" + port + "/v1#access_token=secret12345678", message: "a fragment"},
		{name: "scheme", url: "file:///etc/passwd", message: "http or https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, _, dialer := network(tc.names)
			env := newProbeEnv(t, Options{Network: n})
			before := s.chats.Load()
			status, _, b := call(t, http.MethodPost, env.url+"/v1/probes", probeBody(tc.url, []int{1}, 41))
			if status < 400 || status >= 500 {
				t.Fatalf("status %d: %s", status, b)
			}
			p := decode[problem](t, b)
			if len(p.Errors) != 1 || p.Errors[0].Location != "body.target.base_url" || !strings.Contains(p.Errors[0].Message, tc.message) {
				t.Fatalf("problem %s, want %q at body.target.base_url", b, tc.message)
			}
			if strings.Contains(string(b), "secret") {
				t.Errorf("the problem echoes the URL's password: %s", b)
			}
			if d := dialer.n.Load(); !tc.dials && d != 0 {
				t.Errorf("%d connections attempted for a target refused before any request", d)
			}
			if s.chats.Load() != before {
				t.Error("a chat request reached the simulator")
			}
			_, _, list := call(t, http.MethodGet, env.url+"/v1/probes", nil)
			if len(decode[ProbeList](t, list).Items) != 0 {
				t.Errorf("a refused probe was stored: %s", list)
			}
		})
	}
}

// TestRebindingIsRefusedAtConnect lets a name pass the check and the
// preflight, then re-binds it to a forbidden address: the probe's own
// connections are refused, and nothing reaches the forbidden address.
func TestRebindingIsRefusedAtConnect(t *testing.T) {
	s := newSim(t, fastSim)
	port := s.url[strings.LastIndex(s.url, ":")+1 : strings.LastIndex(s.url, "/v1")]
	n, res, dialer := network(map[string][]string{"sim.internal": {"127.0.0.1"}})
	res.after, res.afterFrom = map[string][]string{"sim.internal": {"10.0.0.7"}}, 3 // the check and the preflight's dial pass
	env := newProbeEnv(t, Options{Network: n})
	id := startProbe(t, env, probeBody("http://sim.internal:"+port+"/v1", []int{1}, 41))
	p := waitProbe(t, env, id, ended)
	if p.Status != "failed" || p.Counts.OK != 0 || !strings.Contains(p.Error, "not allowed") {
		t.Fatalf("probe after rebinding: %+v", p)
	}
	if s.chats.Load() != 0 || dialer.n.Load() != 1 {
		t.Fatalf("%d chat requests, %d connections (only the preflight's may be made)", s.chats.Load(), dialer.n.Load())
	}
}

// TestProbeCredentials checks the ways a key is given or refused.
func TestProbeCredentials(t *testing.T) {
	t.Setenv("PLANNER_TEST_EMPTY_KEY", "")
	pc := smallCaps()
	pc.MaxRunning = 2
	pc.Credentials = append(pc.Credentials, config.Credential{Name: "empty", Env: "PLANNER_TEST_EMPTY_KEY", Header: "Authorization"})
	env := newProbeEnv(t, Options{Probe: pc})
	cfg := fastSim
	cfg.APIKey = "sk-right-0123456789abcdef"
	s := newSim(t, cfg)
	for _, tc := range []struct {
		name       string
		credential string
		header     string
		location   string
		message    string
	}{
		{"both", "empty", "Bearer sk-x", "body.target.credential", "not both"},
		{"unset variable", "empty", "", "body.target.credential", "PLANNER_TEST_EMPTY_KEY of credential \"empty\" is empty or unset"},
		{"wrong key", "", "Bearer sk-wrong-0123456789abcdef", "header.X-Probe-Authorization", "credentials refused"},
		{"no key", "", "", "body.target.credential", "the endpoint wants a key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := probeBody(s.url, []int{1}, 41)
			if tc.credential != "" {
				body["target"].(map[string]any)["credential"] = tc.credential
			}
			var header []string
			if tc.header != "" {
				header = []string{keyHeader, tc.header}
			}
			status, _, b := call(t, http.MethodPost, env.url+"/v1/probes", body, header...)
			p := decode[problem](t, b)
			if status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Location != tc.location || !strings.Contains(p.Errors[0].Message, tc.message) {
				t.Fatalf("%d %s; want %q at %s", status, b, tc.message, tc.location)
			}
			if tc.header != "" && strings.Contains(string(b), strings.TrimPrefix(tc.header, "Bearer ")) {
				t.Errorf("the problem echoes the key: %s", b)
			}
		})
	}
}

// newRedirector serves h on loopback for the test and returns its URL.
func newRedirector(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
