package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/sim"
)

const minimalScenario = `quotas:
  - name: prod
    rpm: 1000
classes:
  - name: chat
    quota: prod
    mode: interactive
    input_tokens: {p50: 100, p95: 200}
    output_tokens: {p50: 50, p95: 100}
    max_tokens: 200
`

func TestWriteFiles(t *testing.T) {
	_, base := startSim(t, sim.Config{MaxNumSeqs: 2, TTFT: 3 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: sim.NoGrowth, RPM: 100000})
	cfg := quick(base)
	cfg.Steps = []int{1, 2, 4}
	res := run(t, t.Context(), cfg, nil)
	dir := filepath.Join(t.TempDir(), "out")
	files, err := WriteFiles(dir, res)
	if err != nil || len(files) != 3 {
		t.Fatalf("WriteFiles: %v, %v", files, err)
	}

	f, err := os.Open(filepath.Join(dir, RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := analysis.ReadCSV(f)
	if err != nil || len(recs) != len(res.Records) {
		t.Fatalf("requests.csv: %d rows, %v; want %d", len(recs), err, len(res.Records))
	}

	data, err := os.ReadFile(filepath.Join(dir, StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"steps", "knee", "collapse", "quota_limited", "usl", "rate_limits", "stop_reason", "notes", "config"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("steps.json lacks %q", k)
		}
	}
	var knee *int
	if err := json.Unmarshal(doc["knee"], &knee); err != nil || knee == nil {
		t.Errorf("knee = %s, want an integer", doc["knee"])
	}
	var rl RateLimits
	if err := json.Unmarshal(doc["rate_limits"], &rl); err != nil || rl.Requests == nil || *rl.Requests.Limit != 100000 {
		t.Errorf("rate_limits = %s (%v)", doc["rate_limits"], err)
	}

	curve, err := os.ReadFile(filepath.Join(dir, CurveFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(curve), "# Measured by planner probe") {
		t.Errorf("curve.yaml has no header comment:\n%s", curve)
	}
	sc, err := scenario.Parse(append([]byte(minimalScenario), curve...))
	if err != nil {
		t.Fatalf("a scenario with the curve does not parse: %v\n%s", err, curve)
	}
	if len(sc.Latency.Curve) != 3 || sc.Latency.Knee == nil || *sc.Latency.Knee != *knee {
		t.Errorf("scenario latency = %+v", sc.Latency)
	}
}

// TestWriteFilesWithoutCurve checks that a run with no success still
// writes its requests and steps, and no curve.
func TestWriteFilesWithoutCurve(t *testing.T) {
	res := run(t, t.Context(), quick("http://"+closedPort(t)+"/v1"), nil)
	dir := t.TempDir()
	files, err := WriteFiles(dir, res)
	if err != nil || len(files) != 2 {
		t.Fatalf("WriteFiles: %v, %v", files, err)
	}
	if _, err := os.Stat(filepath.Join(dir, CurveFile)); !os.IsNotExist(err) {
		t.Errorf("curve.yaml written for a run without a curve: %v", err)
	}
}

// recordingObserver renders everything it sees, so that the test can look
// for the key in it.
type recordingObserver struct{ b strings.Builder }

func (o *recordingObserver) StepStarted(c, n int)     { fmt.Fprintln(&o.b, c, n) }
func (o *recordingObserver) Record(r analysis.Record) { fmt.Fprintf(&o.b, "%+v\n", r) }
func (o *recordingObserver) StepDone(s analysis.Step) { fmt.Fprintf(&o.b, "%+v\n", s) }

// TestAPIKeyNeverLeaks runs with a key against an endpoint that accepts it
// and one that echoes it back in its errors, and looks for the key in every
// output: files, the result as JSON, the failure, the observer's view.
func TestAPIKeyNeverLeaks(t *testing.T) {
	const key = "sk-never-leak-9f8e7d6c5b4a39281706"
	_, good := startSim(t, sim.Config{APIKey: key, TTFT: time.Millisecond, ITL: time.Millisecond, MaxNumSeqs: 8, RPM: 100000})
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-echo", r.Header.Get("Authorization"))
		http.Error(w, `{"error":{"message":"Incorrect API key provided: `+r.Header.Get("Authorization")+`"}}`, http.StatusUnauthorized)
	}))
	t.Cleanup(echo.Close)

	for _, base := range []string{good, echo.URL + "/v1?api-version=1&key=" + key} {
		cfg := quick(base)
		cfg.APIKey = key
		obs := &recordingObserver{}
		res := run(t, t.Context(), cfg, obs)
		dir := t.TempDir()
		if _, err := WriteFiles(dir, res); err != nil {
			t.Fatal(err)
		}
		var all bytes.Buffer
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			all.Write(data)
		}
		js, err := json.Marshal(res.Summary())
		if err != nil {
			t.Fatal(err)
		}
		cfgJS, _ := json.Marshal(res.Config)
		all.Write(js)
		all.Write(cfgJS)
		all.WriteString(obs.b.String())
		fmt.Fprintf(&all, "%v %+v", res.Failure(), res.ErrorSamples)
		if bytes.Contains(all.Bytes(), []byte(key)) {
			t.Errorf("the key appears in the outputs of a run against %s:\n%s", redactURL(base), all.String())
		}
		if base == good && res.Failure() != nil {
			t.Errorf("the key was not sent: %v", res.Failure())
		}
	}
}
