package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/api"
	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/plan"
)

// fiveTiers is a configuration file with a catalogue of five tiers for
// the priced example's provisioned key (/quotas/1, a nightly batch of
// 20,000 requests of 2,000 input and 400 output tokens, which needs some
// 160,000 tpm and 65 rpm): cheap-tight is the cheapest but too small in
// tpm and hourly-small in rpm; of the other three hourly costs least, 5
// an hour for 24 hours (120 a day), against payg's 20,000 × (2,000 × 2.5 +
// 400 × 10)/10⁶ = 180 and premium's 240.
const fiveTiers = `
tiers:
  - {name: cheap-tight, description: t, rpm: 600, tpm: 100000, price: {input_per_mtok: 1, output_per_mtok: 4}}
  - {name: payg, description: t, rpm: 600, tpm: 1000000, price: {input_per_mtok: 2.5, output_per_mtok: 10}}
  - {name: premium, description: t, rpm: 1000, tpm: 2000000, price: {input_per_mtok: 3, output_per_mtok: 15}}
  - {name: hourly, description: t, rpm: 600, tpm: 2000000, price: {per_hour: 5}}
  - {name: hourly-small, description: t, rpm: 30, price: {per_hour: 1}}
`

func catalogueFile(t *testing.T) (string, []config.Tier) {
	t.Helper()
	cleanServeEnv(t)
	path := filepath.Join(t.TempDir(), "planner.yaml")
	if err := os.WriteFile(path, []byte(fiveTiers), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := execute(t, "", "tiers", "--config", path, "-o", "json")
	if code != exitOK {
		t.Fatalf("planner tiers: exit %d: %s", code, errOut)
	}
	var listed struct{ Tiers []config.Tier }
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed.Tiers) != 5 {
		t.Fatalf("planner tiers -o json: %v\n%s", err, out)
	}
	return path, listed.Tiers
}

// apiPost answers a request to the API of the catalogue tiers.
func apiPost(t *testing.T, tiers []config.Tier, path string, body any) []byte {
	t.Helper()
	b, _ := json.Marshal(body)
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Host = "localhost"
	rec := httptest.NewRecorder()
	api.New(api.Options{Tiers: tiers}).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// TestWhatIfTiersNamesTheCheapest: planner what-if --tiers over the five
// tiers names hourly, the cheapest tier in which every class fits, as
// POST /v1/what-if does with the same catalogue, ranks them by cost, and
// says when provisioned hourly is cheaper than pay-as-you-go payg: above
// 120 / (180 / 20,000) = 13,333 requests a day.
func TestWhatIfTiersNamesTheCheapest(t *testing.T) {
	path, tiers := catalogueFile(t)
	names := "cheap-tight,payg,premium,hourly,hourly-small"
	code, out, errOut := execute(t, "", "what-if", "--example", "priced", "--tiers", names, "--path", "/quotas/1", "--config", path, "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var cli plan.WhatIf
	if err := json.Unmarshal([]byte(out), &cli); err != nil {
		t.Fatal(err)
	}
	r := cli.Ranking
	if r == nil || r.Cheapest == nil || *r.Cheapest != "hourly" || r.Tiers[2].Tier != "hourly" || r.Tiers[2].Cost.PerDay != 1783.2 {
		t.Fatalf("ranking %s", out)
	}
	if r.BreakEven == nil || r.BreakEven.RequestsPerDay != 13333 || r.BreakEven.PayAsYouGo != "payg" {
		t.Errorf("break-even %+v", r.BreakEven)
	}
	var sc any
	if err := yaml.Unmarshal([]byte(exampleText(t, "priced")), &sc); err != nil {
		t.Fatal(err)
	}
	var fromAPI api.WhatIfResponse
	body := apiPost(t, tiers, "/v1/what-if", map[string]any{"scenario": sc,
		"variations": []map[string]any{{"path": "/quotas/1", "tiers": strings.Split(names, ",")}}})
	if err := json.Unmarshal(body, &fromAPI); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cli.Ranking, fromAPI.Ranking) || !reflect.DeepEqual(cli.Cells, fromAPI.Cells) {
		t.Errorf("the command's ranking differs from the API's:\ncommand %+v\napi     %+v", cli.Ranking, fromAPI.Ranking)
	}
	code, out, _ = execute(t, "", "what-if", "--example", "priced", "--tiers", names, "--path", "/quotas/1", "--config", path)
	out = strings.Join(strings.Fields(out), " ") // the summary is wrapped
	if code != exitOK || !strings.Contains(out, "The cheapest tier in which every class fits is hourly, at 1,783.20 USD a day") ||
		!strings.Contains(out, "above 13,333 requests a day") {
		t.Errorf("table:\n%s", out)
	}
}

// TestPlanRemedyNamesATier: with the nightly batch's key cut to 100,000
// tpm, the tpm remedy of planner plan names hourly and the change a day,
// 120 against the key's 288: 168 less; the API's plan with the same
// catalogue says the same.
func TestPlanRemedyNamesATier(t *testing.T) {
	path, tiers := catalogueFile(t)
	tight := strings.Replace(exampleText(t, "priced"), "    rpm: 600\n    tpm: 2000000\n", "    rpm: 600\n    tpm: 100000\n", 1)
	code, out, errOut := execute(t, tight, "plan", "-f", "-", "--config", path, "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	rem := p.Classes[2].Remedies
	if len(rem) == 0 || rem[0].Cost == nil || rem[0].Cost.Tier != "hourly" || *rem[0].Cost.ChangePerDay != -168 {
		t.Fatalf("remedies %s", out)
	}
	var sc any
	if err := yaml.Unmarshal([]byte(tight), &sc); err != nil {
		t.Fatal(err)
	}
	var fromAPI plan.Plan
	if err := json.Unmarshal(apiPost(t, tiers, "/v1/plans", map[string]any{"scenario": sc}), &fromAPI); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromAPI.Classes[2].Remedies, rem) {
		t.Errorf("API remedies %+v, command %+v", fromAPI.Classes[2].Remedies, rem)
	}
	code, out, _ = execute(t, tight, "plan", "-f", "-", "--config", path)
	out = strings.Join(strings.Fields(out), " ")
	if code != exitOK || !strings.Contains(out, "tier hourly gives it: 120.00 USD a day, 168.00 less than now") {
		t.Errorf("table:\n%s", out)
	}
}

// TestTiersCommand: planner tiers lists the built-in catalogue as GET
// /v1/tiers does, and a tier variation's mistakes are usage errors that
// name the flag.
func TestTiersCommand(t *testing.T) {
	cleanServeEnv(t)
	code, out, errOut := execute(t, "", "tiers", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var listed api.TiersResponse
	if err := json.Unmarshal([]byte(out), &listed); err != nil {
		t.Fatal(err)
	}
	builtin, err := config.DefaultTiers()
	if err != nil || !reflect.DeepEqual(listed.Tiers, builtin) {
		t.Errorf("planner tiers: %+v, want the built-in catalogue", listed.Tiers)
	}
	code, out, _ = execute(t, "", "tiers")
	if code != exitOK || !strings.Contains(out, "example-provisioned") || !strings.Contains(out, "USD 20.00 /hour") || !strings.Contains(out, "written 2026-12-01") {
		t.Errorf("table:\n%s", out)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--tiers", "example-small"}, "together"},
		{[]string{"--path", "/quotas/0"}, "together"},
		{[]string{"--tiers", "example-gold", "--path", "/quotas/0"}, `--tiers example-gold: no tier named "example-gold"`},
		{[]string{"--tiers", "example-small", "--path", "/quotas/4"}, "--path: a tier variation must point at a quota"},
		{[]string{"--tiers", ",", "--path", "/quotas/0"}, "--tiers: a tier name is empty"},
		{[]string{"--tiers", "example-gold,example-gold", "--path", "/quotas/0"}, `--tiers example-gold: no tier named "example-gold"`},
	} {
		code, _, errOut := execute(t, "", append([]string{"what-if", "--example", "chat"}, tt.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, %s; want a usage error saying %q", tt.args, code, errOut, tt.want)
		}
		if strings.Count(errOut, tt.want) > 1 {
			t.Errorf("%v: %s says it more than once", tt.args, errOut)
		}
	}
}

// TestCatalogueWithAMisspeltKey: a configuration file whose catalogue is
// under a key no setting takes (tier: for tiers:) is refused by every
// command that reads the catalogue, rather than leaving the built-in one
// in place.
func TestCatalogueWithAMisspeltKey(t *testing.T) {
	cleanServeEnv(t)
	path := filepath.Join(t.TempDir(), "planner.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(fiveTiers, "tiers:", "tier:", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"tiers", "--config", path},
		{"plan", "--example", "chat", "--config", path},
		{"what-if", "--example", "priced", "--tiers", "example-small", "--path", "/quotas/1", "--config", path},
	} {
		code, out, errOut := execute(t, "", args...)
		if code != exitError || out != "" || !strings.Contains(errOut, "tier: unknown setting") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

// TestTiersShowPricesAsWritten: a price is shown with the digits it was
// written with, beyond the cents (Anthropic's cache writes of 3.125 or
// 1.875 a million tokens), not rounded to another price, and a small one
// in decimals rather than as 5e-05.
func TestTiersShowPricesAsWritten(t *testing.T) {
	cleanServeEnv(t)
	path := filepath.Join(t.TempDir(), "planner.yaml")
	conf := "tiers:\n  - {name: sonnet, description: t, rpm: 600, price: {input_per_mtok: 3, cache_write_per_mtok: 3.125, cached_input_per_mtok: 0.00005, output_per_mtok: 1234.5678}}\n" +
		"  - {name: rented, description: t, rpm: 600, price: {per_hour: 1.875}}\n"
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := execute(t, "", "tiers", "--config", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"USD 3.00 in, 0.00005 cached, 3.125 cache write, 1,234.5678 out /Mtok", "USD 1.875 /hour"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}

// TestWhatIfTiersNameAFittingTierWithoutAPrice: a tier without a price in
// which every class fits is ranked after the priced ones, and the answer
// says that it fits but has no price, rather than naming a priced tier
// the cheapest as if no other fitted.
func TestWhatIfTiersNameAFittingTierWithoutAPrice(t *testing.T) {
	cleanServeEnv(t)
	path := filepath.Join(t.TempDir(), "planner.yaml")
	conf := "tiers:\n  - {name: free, description: t, rpm: 600, tpm: 1000000}\n" +
		"  - {name: payg, description: t, rpm: 600, tpm: 1000000, price: {input_per_mtok: 2.5, output_per_mtok: 10}}\n" +
		"  - {name: tiny, description: t, rpm: 6, price: {per_hour: 1}}\n"
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ tiers, want string }{
		{"free,payg", "the cheapest tier in which every class fits is payg, at 659.14 USD a day; free fits every class too but has no price, so it is not ranked by cost"},
		{"free,tiny", "no priced tier fits every class; free fits every class but has no price, so it is not ranked by cost"},
	} {
		code, out, errOut := execute(t, "", "what-if", "--example", "chat", "--config", path, "--tiers", tt.tiers, "--path", "/quotas/0", "-o", "json")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", tt.tiers, code, errOut)
		}
		var g plan.WhatIf
		if err := json.Unmarshal([]byte(out), &g); err != nil || g.Ranking == nil {
			t.Fatalf("%s: %v\n%s", tt.tiers, err, out)
		}
		if g.Ranking.Summary != tt.want {
			t.Errorf("%s: summary %q, want %q", tt.tiers, g.Ranking.Summary, tt.want)
		}
	}
}
