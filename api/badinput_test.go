package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// edit returns the JSON of the chat example's plan request after change
// has edited its generic form (body["scenario"] is the scenario).
func edit(t *testing.T, change func(body map[string]any)) string {
	t.Helper()
	body := map[string]any{"scenario": exampleDoc(t, "chat")}
	change(body)
	return string(mustJSON(t, body))
}

// whatIf is the JSON of a what-if request on the chat example.
func whatIf(t *testing.T, variations any, change func(sc map[string]any)) string {
	t.Helper()
	sc := exampleDoc(t, "chat")
	if change != nil {
		change(sc)
	}
	return string(mustJSON(t, map[string]any{"scenario": sc, "variations": variations}))
}

// obj walks a generic JSON document by keys and list indexes.
func obj(doc any, path ...any) map[string]any {
	for _, step := range path {
		switch k := step.(type) {
		case string:
			doc = doc.(map[string]any)[k]
		case int:
			doc = doc.([]any)[k]
		}
	}
	return doc.(map[string]any)
}

func sc(b map[string]any) map[string]any { return b["scenario"].(map[string]any) }

// TestBadInput sends malformed requests: each must get a 4xx problem whose
// errors name the bad field (or "body" when the body as a whole is wrong),
// never a 5xx; and the server must plan a good request afterwards.
func TestBadInput(t *testing.T) {
	const limit = 64 << 10
	s := newServer(t, Options{MaxBodyBytes: limit})
	values := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = 1000 * (i + 1)
		}
		return out
	}
	cases := []struct {
		name     string
		path     string // default /v1/plans
		body     string
		ctype    string // default application/json
		status   int
		location string // one of the problem's locations
	}{
		{name: "broken JSON", body: `{"scenario": {"quotas": [`, status: 400, location: "body"},
		{name: "not JSON", body: `quotas: [prod]`, status: 400, location: "body"},
		{name: "empty body", body: ``, status: 400, location: "body"},
		{name: "trailing garbage", body: edit(t, func(map[string]any) {}) + `}`, status: 400, location: "body"},
		{name: "overflowing number", body: `{"scenario": {"quotas": [{"name": "p", "rpm": 1e400}]}}`, status: 400, location: "body"},
		{name: "body is a list", body: `[]`, status: 422, location: "body"},
		{name: "a key given twice", body: strings.Replace(edit(t, func(map[string]any) {}), `"rpm":`, `"rpm":1,"rpm":`, 1), status: 400, location: "body"},
		{name: "a key in another case", body: strings.Replace(edit(t, func(map[string]any) {}), `"rpm":`, `"RPM":`, 1), status: 422, location: "body.scenario.quotas[0].RPM"},
		{name: "seed beyond 2^53", body: edit(t, func(b map[string]any) { sc(b)["policy"] = map[string]any{"seed": 1 << 60} }), status: 422, location: "body.scenario.policy.seed"},
		{name: "seed at 2^53 + 1", body: strings.Replace(edit(t, func(b map[string]any) { sc(b)["policy"] = map[string]any{"seed": 1} }), `"seed":1`, `"seed":9007199254740993`, 1), status: 422, location: "body.scenario.policy.seed"},
		{name: "scenario is a number", body: `{"scenario": 5}`, status: 422, location: "body.scenario"},
		{name: "scenario missing", body: `{}`, status: 422, location: "body.scenario"},
		{name: "quotas is a string", body: edit(t, func(b map[string]any) { sc(b)["quotas"] = "prod" }), status: 422, location: "body.scenario.quotas"},
		{name: "rpm is a string", body: edit(t, func(b map[string]any) { obj(b, "scenario", "quotas", 0)["rpm"] = "3000" }), status: 422, location: "body.scenario.quotas[0].rpm"},
		{name: "negative rpm", body: edit(t, func(b map[string]any) { obj(b, "scenario", "quotas", 0)["rpm"] = -1 }), status: 422, location: "body.scenario.quotas[0].rpm"},
		{name: "zero headroom", body: edit(t, func(b map[string]any) { obj(b, "scenario", "quotas", 0)["headroom"] = 0 }), status: 422, location: "body.scenario.quotas[0].headroom"},
		{name: "headroom above 1", body: edit(t, func(b map[string]any) { obj(b, "scenario", "quotas", 0)["headroom"] = 1.5 }), status: 422, location: "body.scenario.quotas[0].headroom"},
		{name: "zero max_tokens", body: edit(t, func(b map[string]any) { obj(b, "scenario", "classes", 0)["max_tokens"] = 0 }), status: 422, location: "body.scenario.classes[0].max_tokens"},
		{name: "NaN as a string", body: edit(t, func(b map[string]any) { obj(b, "scenario", "classes", 0, "input_tokens")["p50"] = "NaN" }), status: 422, location: "body.scenario.classes[0].input_tokens.p50"},
		{name: "Infinity as a string", body: edit(t, func(b map[string]any) { obj(b, "scenario", "latency", "ttft_ms")["p95"] = "Infinity" }), status: 422, location: "body.scenario.latency.ttft_ms.p95"},
		{name: "huge number", body: edit(t, func(b map[string]any) { obj(b, "scenario", "quotas", 0)["tpm"] = 1e300 }), status: 422, location: "body.scenario.quotas[0].tpm"},
		{name: "huge demand", body: edit(t, func(b map[string]any) { obj(b, "scenario", "classes", 0, "demand")["rps"] = 1e300 }), status: 422, location: "body.scenario.classes[0].demand.rps"},
		{name: "empty quotas", body: edit(t, func(b map[string]any) { sc(b)["quotas"] = []any{} }), status: 422, location: "body.scenario.quotas"},
		{name: "quotas missing", body: edit(t, func(b map[string]any) { delete(sc(b), "quotas") }), status: 422, location: "body.scenario.quotas"},
		{name: "null classes", body: edit(t, func(b map[string]any) { sc(b)["classes"] = nil }), status: 422, location: "body.scenario.classes"},
		{name: "null quotas", body: `{"scenario": {"quotas": null, "classes": null}}`, status: 422, location: "body.scenario.quotas"},
		{name: "empty classes", body: edit(t, func(b map[string]any) { sc(b)["classes"] = []any{} }), status: 422, location: "body.scenario.classes"},
		{name: "too many classes", body: edit(t, func(b map[string]any) {
			cl := obj(b, "scenario", "classes", 0)
			many := make([]any, 33)
			for i := range many {
				c := map[string]any{}
				for k, v := range cl {
					c[k] = v
				}
				c["name"] = "c" + strings.Repeat("x", i)
				many[i] = c
			}
			sc(b)["classes"] = many
		}), status: 422, location: "body.scenario.classes"},
		{name: "unknown top-level field", body: edit(t, func(b map[string]any) { b["colour"] = "red" }), status: 422, location: "body.colour"},
		{name: "unknown scenario field", body: edit(t, func(b map[string]any) { sc(b)["quota"] = 1 }), status: 422, location: "body.scenario.quota"},
		{name: "unknown class field", body: edit(t, func(b map[string]any) { obj(b, "scenario", "classes", 0)["colour"] = "red" }), status: 422, location: "body.scenario.classes[0].colour"},
		{name: "unknown distribution field", body: edit(t, func(b map[string]any) { obj(b, "scenario", "classes", 0, "output_tokens")["p99"] = 900 }), status: 422, location: "body.scenario.classes[0].output_tokens.p99"},
		{name: "missing class name", body: edit(t, func(b map[string]any) { delete(obj(b, "scenario", "classes", 0), "name") }), status: 422, location: "body.scenario.classes[0].name"},
		{name: "bad quota name", body: edit(t, func(b map[string]any) { obj(b, "scenario", "quotas", 0)["name"] = "my key!" }), status: 422, location: "body.scenario.quotas[0].name"},
		{name: "unknown mode", body: edit(t, func(b map[string]any) { obj(b, "scenario", "classes", 0)["mode"] = "urgent" }), status: 422, location: "body.scenario.classes[0].mode"},
		{name: "unknown token accounting", body: edit(t, func(b map[string]any) { obj(b, "scenario", "quotas", 0)["token_accounting"] = "maybe" }), status: 422, location: "body.scenario.quotas[0].token_accounting"},
		{name: "too few Monte Carlo draws", body: edit(t, func(b map[string]any) { sc(b)["policy"] = map[string]any{"monte_carlo_draws": 10} }), status: 422, location: "body.scenario.policy.monte_carlo_draws"},
		{name: "zero knee", body: edit(t, func(b map[string]any) { obj(b, "scenario", "latency")["knee"] = 0 }), status: 422, location: "body.scenario.latency.knee"},
		{name: "p95 below p50", body: edit(t, func(b map[string]any) { obj(b, "scenario", "classes", 0, "output_tokens")["p95"] = 100 }), status: 422, location: "body.scenario.classes[0].output_tokens.p95"},
		{name: "unknown quota name", body: edit(t, func(b map[string]any) { obj(b, "scenario", "classes", 0)["quota"] = "staging" }), status: 422, location: "body.scenario.classes[0].quota"},
		{name: "duplicate class names", body: edit(t, func(b map[string]any) {
			c := obj(b, "scenario", "classes", 0)
			sc(b)["classes"] = []any{c, c}
		}), status: 422, location: "body.scenario.classes[1].name"},
		{name: "duplicate quota names", body: edit(t, func(b map[string]any) {
			q := obj(b, "scenario", "quotas", 0)
			sc(b)["quotas"] = []any{q, q}
		}), status: 422, location: "body.scenario.quotas[1].name"},
		{name: "max_tokens missing under max_tokens accounting", body: edit(t, func(b map[string]any) { delete(obj(b, "scenario", "classes", 0), "max_tokens") }), status: 422, location: "body.scenario.classes[0].max_tokens"},
		{name: "two forms of a distribution", body: edit(t, func(b map[string]any) { obj(b, "scenario", "classes", 0, "input_tokens")["fixed"] = 500 }), status: 422, location: "body.scenario.classes[0].input_tokens"},
		{name: "two forms of demand", body: edit(t, func(b map[string]any) { obj(b, "scenario", "classes", 0, "demand")["rpm"] = 60 }), status: 422, location: "body.scenario.classes[0].demand"},
		{name: "no latency profile", body: edit(t, func(b map[string]any) { delete(sc(b), "latency") }), status: 422, location: "body.scenario.classes[0].latency"},
		{name: "wrong content type", body: edit(t, func(map[string]any) {}), ctype: "text/plain", status: 415, location: "header.Content-Type"},
		{name: "oversize body", body: edit(t, func(map[string]any) {}) + strings.Repeat(" ", limit), status: 413, location: "body"},
		{name: "what-if: path is not a JSON Pointer", path: "/v1/what-if", body: whatIf(t, []any{map[string]any{"path": "quotas/0/tpm", "values": []any{1}}}, nil), status: 422, location: "body.variations[0].path"},
		{name: "what-if: path to nothing", path: "/v1/what-if", body: whatIf(t, []any{map[string]any{"path": "/quotas/3/tpm", "values": []any{1}}}, nil), status: 422, location: "body.variations[0].path"},
		{name: "what-if: grid too large", path: "/v1/what-if", body: whatIf(t, []any{
			map[string]any{"path": "/quotas/0/tpm", "values": values(21)},
			map[string]any{"path": "/quotas/0/rpm", "values": values(20)},
		}, nil), status: 422, location: "body.variations"},
		{name: "what-if: three variations", path: "/v1/what-if", body: whatIf(t, []any{
			map[string]any{"path": "/quotas/0/tpm", "values": []any{1}},
			map[string]any{"path": "/quotas/0/rpm", "values": []any{1}},
			map[string]any{"path": "/quotas/0/rpd", "values": []any{1}},
		}, nil), status: 422, location: "body.variations"},
		{name: "what-if: one field varied twice", path: "/v1/what-if", body: whatIf(t, []any{
			map[string]any{"path": "/quotas/0/tpm", "values": []any{1}},
			map[string]any{"path": "/quotas/0/tpm", "values": []any{2}},
		}, nil), status: 422, location: "body.variations[1].path"},
		{name: "what-if: no variations", path: "/v1/what-if", body: whatIf(t, []any{}, nil), status: 422, location: "body.variations"},
		{name: "what-if: empty values", path: "/v1/what-if", body: whatIf(t, []any{map[string]any{"path": "/quotas/0/tpm", "values": []any{}}}, nil), status: 422, location: "body.variations[0].values"},
		{name: "what-if: values and tiers", path: "/v1/what-if", body: whatIf(t, []any{map[string]any{"path": "/quotas/0", "values": []any{1}, "tiers": []any{"small"}}}, nil), status: 422, location: "body.variations[0]"},
		{name: "what-if: neither values nor tiers", path: "/v1/what-if", body: whatIf(t, []any{map[string]any{"path": "/quotas/0"}}, nil), status: 422, location: "body.variations[0]"},
		{name: "what-if: unknown tier", path: "/v1/what-if", body: whatIf(t, []any{map[string]any{"path": "/quotas/0", "tiers": []any{"small", "platinum"}}}, nil), status: 422, location: "body.variations[0].tiers[1]"},
		{name: "what-if: tier on a field, not a quota", path: "/v1/what-if", body: whatIf(t, []any{map[string]any{"path": "/quotas/0/tpm", "tiers": []any{"small"}}}, nil), status: 422, location: "body.variations[0].path"},
		{name: "what-if: tier on a missing quota", path: "/v1/what-if", body: whatIf(t, []any{map[string]any{"path": "/quotas/1", "tiers": []any{"small"}}}, nil), status: 422, location: "body.variations[0].path"},
		{name: "what-if: unknown variation field", path: "/v1/what-if", body: whatIf(t, []any{map[string]any{"path": "/quotas/0/tpm", "values": []any{1}, "step": 2}}, nil), status: 422, location: "body.variations[0].step"},
		{name: "what-if: invalid scenario", path: "/v1/what-if", body: whatIf(t, []any{map[string]any{"path": "/quotas/0/tpm", "values": []any{1}}}, func(sc map[string]any) {
			obj(sc, "classes", 0, "output_tokens")["p95"] = 1
		}), status: 422, location: "body.scenario.classes[0].output_tokens.p95"},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if seen[tc.body+tc.ctype] {
				t.Fatalf("the same request as another case")
			}
			seen[tc.body+tc.ctype] = true
			path := tc.path
			if path == "" {
				path = "/v1/plans"
			}
			ctype := tc.ctype
			if ctype == "" {
				ctype = "application/json"
			}
			rec := send(s, http.MethodPost, path, []byte(tc.body), "Content-Type", ctype)
			if rec.Code >= 500 || rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			p := readProblem(t, rec)
			if !slices.Contains(p.locations(), tc.location) {
				t.Errorf("locations %q lack %q: %s", p.locations(), tc.location, rec.Body)
			}
			seenAt := map[string]bool{}
			for _, e := range p.Errors {
				if e.Location == "" || e.Message == "" {
					t.Errorf("a problem without location or message: %+v", e)
				}
				if seenAt[e.Location] {
					t.Errorf("two problems at %s: %s", e.Location, rec.Body)
				}
				seenAt[e.Location] = true
			}
		})
	}
	rec := send(s, http.MethodPost, "/v1/plans", []byte(edit(t, func(map[string]any) {})))
	if rec.Code != http.StatusOK {
		t.Fatalf("a good request after the bad ones: %d %s", rec.Code, rec.Body)
	}
}

// TestEveryProblemAtOnce checks that schema and rule problems come together,
// each reported once: a value the schema refuses is not reported again by
// the rules it then breaks.
func TestEveryProblemAtOnce(t *testing.T) {
	s := newServer(t, Options{})
	body := edit(t, func(b map[string]any) {
		q := obj(b, "scenario", "quotas", 0)
		q["rpm"] = -5                                                        // schema
		obj(b, "scenario", "classes", 0)["quota"] = "staging"                // rule
		obj(b, "scenario", "classes", 0, "output_tokens")["p50"] = "lots"    // schema; p95 >= p50 is not checked again
		obj(b, "scenario", "classes", 0, "input_tokens")["p95"] = 10         // rule: p95 < p50 600
		obj(b, "scenario", "classes", 0, "demand")["rps"] = "two per second" // schema
	})
	rec := send(s, http.MethodPost, "/v1/plans", []byte(body))
	if rec.Code != http.StatusUnprocessableEntity {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	p := readProblem(t, rec)
	got := p.locations()
	slices.Sort(got)
	want := []string{
		"body.scenario.classes[0].demand.rps",
		"body.scenario.classes[0].input_tokens.p95",
		"body.scenario.classes[0].output_tokens.p50",
		"body.scenario.classes[0].quota",
		"body.scenario.quotas[0].rpm",
	}
	if !slices.Equal(got, want) {
		t.Errorf("locations:\n got %q\nwant %q", got, want)
	}
	for _, e := range p.Errors {
		if e.Location == "body.scenario.classes[0].input_tokens.p95" && (e.Message != "must be >= p50" || e.Value != 10.0) {
			t.Errorf("rule problem %+v", e)
		}
	}
	var raw map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil || raw["title"] != "Unprocessable Entity" {
		t.Errorf("problem document %v (%v)", raw, err)
	}
}

// TestJSONBodiesReadAsScenarioFiles: a request body is read as the
// command line reads a scenario file: a key given twice is refused with
// where it is, and whole numbers fill integer fields whatever their
// notation (7e2, -0), planning as their plain digits do; a number beyond
// the range of a float64 is named by where it is.
func TestJSONBodiesReadAsScenarioFiles(t *testing.T) {
	s := newServer(t, Options{})
	plain := edit(t, func(b map[string]any) {
		sc(b)["policy"] = map[string]any{"seed": 0, "max_pool": 700}
		obj(b, "scenario", "classes", 0)["max_tokens"] = 700
	})
	rec := send(s, http.MethodPost, "/v1/plans", []byte(plain))
	if rec.Code != http.StatusOK {
		t.Fatalf("plain digits: %d %s", rec.Code, rec.Body)
	}
	want := rec.Body.String()
	other := strings.NewReplacer(`"seed":0`, `"seed":-0`, `"max_pool":700`, `"max_pool":7e2`, `"max_tokens":700`, `"max_tokens":0.7E3`).Replace(plain)
	if other == plain {
		t.Fatal("the body was not rewritten")
	}
	if rec := send(s, http.MethodPost, "/v1/plans", []byte(other)); rec.Code != http.StatusOK || rec.Body.String() != want {
		t.Errorf("-0, 7e2 and 0.7E3: %d, the same plan as plain digits %v: %.300s", rec.Code, rec.Body.String() == want, rec.Body)
	}
	twice := strings.Replace(plain, `"headroom":`, `"headroom":0.5,"headroom":`, 1)
	rec = send(s, http.MethodPost, "/v1/plans", []byte(twice))
	if p := readProblem(t, rec); rec.Code != http.StatusBadRequest || len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, `scenario.quotas[0].headroom: the key "headroom" is given twice`) {
		t.Errorf("headroom twice: %d %s", rec.Code, rec.Body)
	}
	huge := strings.Replace(plain, `"headroom":`, `"headroom":1e999,"x":`, 1)
	rec = send(s, http.MethodPost, "/v1/plans", []byte(huge))
	if p := readProblem(t, rec); rec.Code != http.StatusBadRequest || len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, "scenario.quotas[0].headroom: the number 1e999 is beyond the range of a number") {
		t.Errorf("headroom 1e999: %d %s", rec.Code, rec.Body)
	}
	nan := strings.Replace(plain, `"headroom":`, `"headroom":NaN,"x":`, 1)
	rec = send(s, http.MethodPost, "/v1/plans", []byte(nan))
	if p := readProblem(t, rec); rec.Code != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Location != "body" ||
		!regexp.MustCompile(`^scenario\.quotas\[0\]\.headroom: line 1, column \d+: NaN is not a JSON number$`).MatchString(p.Errors[0].Message) {
		t.Errorf("headroom NaN: %d %s", rec.Code, rec.Body)
	}
}

// TestProblemValuesHaveNoNegativeZero: a field given as -0 where the
// schema wants more than 0 is refused with its value echoed as 0, not as
// "-0", which no answer of the service holds.
func TestProblemValuesHaveNoNegativeZero(t *testing.T) {
	s := newServer(t, Options{})
	body := strings.Replace(edit(t, func(map[string]any) {}), `"rpm":3000`, `"rpm":-0`, 1)
	if !strings.Contains(body, `"rpm":-0`) {
		t.Fatalf("no rpm in %s", body)
	}
	rec := send(s, http.MethodPost, "/v1/plans", []byte(body))
	p := readProblem(t, rec)
	if rec.Code != http.StatusUnprocessableEntity || !slices.Equal(p.locations(), []string{"body.scenario.quotas[0].rpm"}) || strings.Contains(rec.Body.String(), "-0") {
		t.Errorf("rpm -0: %d %s", rec.Code, rec.Body)
	}
}

// TestNegativeZeroIsReadAsZero: a number given as -0 (or -0.0, -0e3) is
// read as 0, in JSON and in YAML, so that no answer echoes it as "-0": a
// stored plan's scenario read back, a what-if's values.
func TestNegativeZeroIsReadAsZero(t *testing.T) {
	s := newServer(t, Options{})
	plain := edit(t, func(b map[string]any) {
		b["save"] = true
		obj(b, "scenario", "classes", 0)["arrival_scv"] = 0
	})
	for _, zero := range []string{"-0", "-0.0", "-0e3", "-0.000E-2"} {
		body := strings.Replace(plain, `"arrival_scv":0`, `"arrival_scv":`+zero, 1)
		if body == plain {
			t.Fatalf("no arrival_scv in %s", plain)
		}
		rec := send(s, http.MethodPost, "/v1/plans", []byte(body))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", zero, rec.Code, rec.Body)
		}
		var saved PlanResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &saved); err != nil {
			t.Fatal(err)
		}
		got := send(s, http.MethodGet, "/v1/plans/"+saved.ID, nil)
		if got.Code != http.StatusOK || !strings.Contains(got.Body.String(), `"arrival_scv":0`) || regexp.MustCompile(`[:\[,]-0[,}\]]`).MatchString(got.Body.String()) {
			t.Errorf("arrival_scv %s read back: %d %.2000s", zero, got.Code, got.Body)
		}
		if strings.Contains(rec.Body.String(), ":-0") {
			t.Errorf("arrival_scv %s: the plan says -0", zero)
		}
	}
	for _, zero := range []string{"-0", "-0.0"} {
		whatIf := fmt.Sprintf(`{"scenario":%s,"variations":[{"path":"/classes/0/arrival_scv","values":[%s, 1]}]}`, mustJSON(t, exampleDoc(t, "chat")), zero)
		for _, ct := range []string{"application/json", "application/yaml"} {
			rec := send(s, http.MethodPost, "/v1/what-if", []byte(whatIf), "Content-Type", ct)
			if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "-0") {
				t.Errorf("a what-if value %s in %s: %d %.300s", zero, ct, rec.Code, rec.Body)
			}
		}
	}
	// 0 and -0 are one value: the grid would plan it twice.
	twice := fmt.Sprintf(`{"scenario":%s,"variations":[{"path":"/classes/0/arrival_scv","values":[0, -0]}]}`, mustJSON(t, exampleDoc(t, "chat")))
	if rec := send(s, http.MethodPost, "/v1/what-if", []byte(twice)); rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "body.variations[0].values[1]") {
		t.Errorf("a what-if of 0 and -0: %d %.300s", rec.Code, rec.Body)
	}
}
