package api

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestDerivedRateIsA422: a batch of requests within a vanishing number of
// hours, which passes the schema, is refused at once with the field named,
// not searched until the deadline.
func TestDerivedRateIsA422(t *testing.T) {
	s := newServer(t, Options{})
	body := `{"scenario":{"quotas":[{"name":"k","rpm":6000}],"latency":{"ttft_ms":{"fixed":500},"tpot_ms":{"fixed":20}},
		"classes":[{"name":"c","quota":"k","mode":"batch","demand":{"requests":1e12,"within_hours":1e-300},
		"input_tokens":{"fixed":100},"output_tokens":{"fixed":100}}]}}`
	for _, path := range []string{"/v1/plans", "/v1/simulations"} {
		rec := send(s, http.MethodPost, path, []byte(body))
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("%s: status %d: %s", path, rec.Code, rec.Body)
		}
		if p := readProblem(t, rec); len(p.Errors) != 1 || p.Errors[0].Location != "body.scenario.classes[0].demand.within_hours" {
			t.Fatalf("%s: %s", path, rec.Body)
		}
	}
	// A daily limit over a vanishing number of active hours, likewise.
	rec := send(s, http.MethodPost, "/v1/plans", []byte(`{"scenario":{"quotas":[{"name":"k","rpd":1e13,"active_hours":1e-300}],
		"latency":{"ttft_ms":{"fixed":500},"tpot_ms":{"fixed":20}},
		"classes":[{"name":"c","quota":"k","mode":"batch","input_tokens":{"fixed":100},"output_tokens":{"fixed":100}}]}}`))
	if p := readProblem(t, rec); rec.Code != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Location != "body.scenario.quotas[0].active_hours" {
		t.Fatalf("active_hours: %d %s", rec.Code, rec.Body)
	}
}

// TestTinyHeadroomPlansFinitely: a headroom of the smallest normal
// float64 gives a plan (200) whose class has no remedy carrying an
// infinity but a warning that no finite limit helps, and nothing is
// logged as an error.
func TestTinyHeadroomPlansFinitely(t *testing.T) {
	var logs strings.Builder
	s := newServer(t, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	rec := send(s, http.MethodPost, "/v1/plans", []byte(`{"scenario":{"quotas":[{"name":"k","rpm":6000,"headroom":2.2250738585072014e-308}],
		"latency":{"ttft_ms":{"fixed":500},"tpot_ms":{"fixed":20}},
		"classes":[{"name":"c","quota":"k","mode":"interactive","demand":{"rps":2},"input_tokens":{"fixed":100},"output_tokens":{"fixed":100}}]}}`))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "no finite limit helps") || !strings.Contains(rec.Body.String(), `"remedies":[]`) {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("an error was logged: %s", logs.String())
	}
}
