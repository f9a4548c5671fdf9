package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/importer"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/redact"
	"github.com/plannerdev/planner/internal/scenario"
)

const minimalScenario = `quotas:
  - name: prod
    rpm: 100000
classes:
  - name: chat
    quota: prod
    mode: interactive
    input_tokens: {p50: 100, p95: 200}
    output_tokens: {p50: 50, p95: 100}
    max_tokens: 200
`

func TestWriteFiles(t *testing.T) {
	// Under a fake clock, so that the knee, and the pool planned from the
	// curve, do not depend on the machine's load.
	var res *Result
	bubble(t, fakeendpoint.Config{MaxNumSeqs: 2, TTFT: 3 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth, RPM: 100000},
		func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
			cfg := quick(base)
			cfg.Steps, cfg.DialContext = []int{1, 2, 4}, dial
			res = run(t, t.Context(), cfg, nil)
		})
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
	recs, err := measure.ReadCSV(f)
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
	for _, k := range []string{"steps", "knee", "collapse", "quota_limited", "usl", "rate_limits", "stop_reason", "notes", "config", "spent"} {
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
	if !strings.HasPrefix(string(curve), "# Measured by planner probe") || !strings.Contains(string(curve), analysis.CurveFileUsage) {
		t.Errorf("curve.yaml has no header comment with its use:\n%s", curve)
	}
	// Used as the file says: appended to a scenario without a latency block.
	sc, err := scenario.Parse(append([]byte(minimalScenario), curve...))
	if err != nil {
		t.Fatalf("a scenario with the curve does not parse: %v\n%s", err, curve)
	}
	if len(sc.Latency.Curve) != 3 || sc.Latency.Knee == nil || *sc.Latency.Knee != *knee {
		t.Errorf("scenario latency = %+v", sc.Latency)
	}
	p, err := plan.New(plan.Options{}).Plan(context.Background(), sc)
	if err != nil || len(p.Classes) != 1 || p.Classes[0].Pool < 1 {
		t.Fatalf("the scenario with the curve does not plan to a pool: %+v, %v", p, err)
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

// TestWriteFilesReplacesAnEarlierRun checks that a run written into the
// directory of an earlier one leaves none of the earlier run's files
// beside its own: a run without a curve removes the earlier curve.yaml
// (which a scenario would otherwise take as this run's measurement), and
// a ramp removes an earlier prompt-cost run's prefill.yaml.
func TestWriteFilesReplacesAnEarlierRun(t *testing.T) {
	_, base := startSim(t, fakeendpoint.Config{MaxNumSeqs: 2, TTFT: 3 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth, RPM: 100000})
	cfg := quick(base)
	cfg.Steps = []int{1, 2}
	ramp := run(t, t.Context(), cfg, nil)
	failed := run(t, t.Context(), quick("http://"+closedPort(t)+"/v1"), nil)

	dir := t.TempDir()
	if _, err := WriteFiles(dir, ramp); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, CurveFile)); err != nil {
		t.Fatalf("the ramp wrote no curve.yaml: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, PromptFile), []byte("latency: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFiles(dir, ramp); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, PromptFile)); !os.IsNotExist(err) {
		t.Errorf("an earlier run's prefill.yaml left beside the ramp's curve.yaml: %v", err)
	}
	files, err := WriteFiles(dir, failed)
	if err != nil || len(files) != 2 {
		t.Fatalf("WriteFiles: %v, %v", files, err)
	}
	if _, err := os.Stat(filepath.Join(dir, CurveFile)); !os.IsNotExist(err) {
		t.Errorf("the earlier run's curve.yaml left beside a run without a curve: %v", err)
	}
}

// recordingObserver renders everything it sees, so that the test can look
// for the key in it.
type recordingObserver struct{ b strings.Builder }

func (o *recordingObserver) StepStarted(c, n int)    { fmt.Fprintln(&o.b, c, n) }
func (o *recordingObserver) Record(r measure.Record) { fmt.Fprintf(&o.b, "%+v\n", r) }
func (o *recordingObserver) StepDone(s measure.Step) { fmt.Fprintf(&o.b, "%+v\n", s) }

// TestAPIKeyNeverLeaks runs with a key against an endpoint that accepts it
// and one that echoes it back in its errors, and with a key in the query
// of a base URL that cannot be reached (whose transport errors quote the
// URL), and looks for the key in every output: files, the result as JSON,
// the failure, the observer's view.
func TestAPIKeyNeverLeaks(t *testing.T) {
	const key = "sk-never-leak-9f8e7d6c5b4a39281706"
	_, good := startSim(t, fakeendpoint.Config{APIKey: key, TTFT: time.Millisecond, ITL: time.Millisecond, MaxNumSeqs: 8, RPM: 100000})
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-echo", r.Header.Get("Authorization"))
		http.Error(w, `{"error":{"message":"Incorrect API key provided: `+r.Header.Get("Authorization")+`"}}`, http.StatusUnauthorized)
	}))
	t.Cleanup(echo.Close)

	const queryKey = "query-key-never-leak-5a4b3c2d1e"
	for _, tc := range []struct{ base, key, header string }{
		{good, key, key},
		{echo.URL + "/v1?api-version=1&key=" + key, key, key},
		{"http://" + closedPort(t) + "/v1?api-version=1&key=" + queryKey, queryKey, ""},
	} {
		base, key := tc.base, tc.key
		cfg := quick(base)
		cfg.APIKey = tc.header
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
			t.Errorf("the key appears in the outputs of a run against %s:\n%s", redact.URL(base), all.String())
		}
		if base == good && res.Failure() != nil {
			t.Errorf("the key was not sent: %v", res.Failure())
		}
	}
}

// TestCSVImportMeasuresLikeTheProbe: planner knee and planner import read
// requests.csv back into the very steps the probe reported, steady state,
// intervals, knee and refinement included.
func TestCSVImportMeasuresLikeTheProbe(t *testing.T) {
	cfg := slotsSim(8)
	cfg.FailRate, cfg.Seed = 0.05, 3
	bubble(t, cfg, func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		p := kneeConfig(base, dial)
		p.Search, p.SearchMax = true, optional.Of(32)
		res := run(t, t.Context(), p, nil)
		var buf bytes.Buffer
		if err := measure.WriteCSV(&buf, res.Records); err != nil {
			t.Fatal(err)
		}
		imp, err := importer.Import("requests.csv", buf.Bytes(), importer.Options{Options: p.AnalysisOptions()})
		if err != nil {
			t.Fatal(err)
		}
		if d := jsonDiff(t, imp.Steps, res.Analysis.Steps, ""); d != "" {
			t.Errorf("imported steps differ from the probe's: %s", d)
		}
		a, b := imp.Analysis, res.Analysis
		if !reflect.DeepEqual(a.Knee, b.Knee) || !reflect.DeepEqual(a.KneeRefined, b.KneeRefined) || a.QuotaLimited != b.QuotaLimited || !reflect.DeepEqual(a.Collapse, b.Collapse) {
			t.Errorf("imported knee %v refined %v quota %v collapse %v; probe %v %v %v %v",
				a.Knee, a.KneeRefined, a.QuotaLimited, a.Collapse, b.Knee, b.KneeRefined, b.QuotaLimited, b.Collapse)
		}
	})
}

// jsonDiff compares a and b as JSON, numbers to 1e-9 relative (requests.csv
// keeps times to the nanosecond, and sums may round apart in the last
// bit), and names the first difference.
func jsonDiff(t *testing.T, a, b any, path string) string {
	t.Helper()
	var x, y any
	for _, p := range []struct {
		in  any
		out *any
	}{{a, &x}, {b, &y}} {
		js, err := json.Marshal(p.in)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(js, p.out); err != nil {
			t.Fatal(err)
		}
	}
	return diffValues(x, y, path)
}

func diffValues(x, y any, path string) string {
	switch xv := x.(type) {
	case map[string]any:
		yv, ok := y.(map[string]any)
		if !ok || len(xv) != len(yv) {
			return fmt.Sprintf("%s: %v vs %v", path, x, y)
		}
		for k := range xv {
			if d := diffValues(xv[k], yv[k], path+"."+k); d != "" {
				return d
			}
		}
	case []any:
		yv, ok := y.([]any)
		if !ok || len(xv) != len(yv) {
			return fmt.Sprintf("%s: %d vs %d items", path, len(xv), len(yv))
		}
		for i := range xv {
			if d := diffValues(xv[i], yv[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
	case float64:
		yv, ok := y.(float64)
		if !ok || math.Abs(xv-yv) > 1e-9*math.Max(math.Abs(xv), math.Abs(yv)) {
			return fmt.Sprintf("%s: %v vs %v", path, x, y)
		}
	default:
		if x != y {
			return fmt.Sprintf("%s: %v vs %v", path, x, y)
		}
	}
	return ""
}
