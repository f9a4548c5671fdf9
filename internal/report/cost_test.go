package report

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/testutil"
)

// TestCostInEveryRendering: the priced example's costs, computed by hand in
// docs/concepts.md, appear in the table, the Markdown and the HTML report,
// the cache's saving apart; a plan without prices shows no cost.
func TestCostInEveryRendering(t *testing.T) {
	s := testutil.Example(t, "priced")
	p, err := plan.New(plan.Options{}).Plan(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	render := map[string]func(*bytes.Buffer) error{
		"table":    func(b *bytes.Buffer) error { return WriteTable(b, p) },
		"markdown": func(b *bytes.Buffer) error { return WriteMarkdown(b, p) },
		"html":     func(b *bytes.Buffer) error { return WriteReportHTML(b, ReportInput{Scenario: s, Plan: p}) },
	}
	want := map[string][]string{
		"table": {"cost: 48.60 USD an hour, 1,166.40 a day, 6.75 per 1,000 requests (pay as you go)",
			"5.75 per 1,000 requests (pay as you go); the prompt cache saves 583.20 a day",
			"cost: 12.00 USD an hour, 288.00 a day, 14.40 per 1,000 requests (provisioned)",
			"cost: 81.30 USD an hour, 1,951.20 a day, 6.99 per 1,000 requests (pay as you go and provisioned); the prompt cache saves 583.20 a day"},
		"markdown": {"## Cost", "| class support | pay as you go | 48.60 | 1,166.40 | 6.75 | 0.00 |",
			"| class assistant | pay as you go | 20.70 | 496.80 | 5.75 | 583.20 |", "| key reserved | provisioned | 12.00 | 288.00 | 14.40 | 0.00 |",
			"| total | pay as you go and provisioned | 81.30 | 1,951.20 | 6.99 | 583.20 |"},
		"html": {"<h3>Cost</h3>", `<tr><td>key payg</td><td>pay as you go</td><td class="n">69.30</td><td class="n">1,663.20</td><td class="n">6.42</td><td class="n">583.20</td></tr>`},
	}
	for name, fn := range render {
		var b bytes.Buffer
		if err := fn(&b); err != nil {
			t.Fatal(err)
		}
		flat := strings.Join(strings.Fields(b.String()), " ")
		for _, w := range want[name] {
			if !strings.Contains(flat, w) {
				t.Errorf("%s lacks %q:\n%s", name, w, b.String())
			}
		}
	}
	bare, err := plan.New(plan.Options{}).Plan(context.Background(), testutil.Example(t, "chat-and-batch"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteMarkdown(&b, bare); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Cost") {
		t.Errorf("an unpriced plan shows a cost:\n%s", b.String())
	}
}

// TestRemedyCostWords says what a remedy's change costs as the plan gives it.
func TestRemedyCostWords(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tt := range []struct {
		rc   plan.RemedyCost
		want string
	}{
		{plan.RemedyCost{Tier: "large", Currency: "USD", PerDay: f(777.6), ChangePerDay: f(155.52)}, "tier large gives it: 777.60 USD a day, 155.52 more than now"},
		{plan.RemedyCost{Tier: "hourly", Currency: "USD", PerDay: f(120), ChangePerDay: f(-168)}, "tier hourly gives it: 120.00 USD a day, 168.00 less than now"},
		{plan.RemedyCost{Currency: "EUR", PerDay: f(622.08), ChangePerDay: f(0)}, "with the limit raised: 622.08 EUR a day, as now"},
		{plan.RemedyCost{Tier: "big", Currency: "USD", PerDay: f(40)}, "tier big gives it: 40.00 USD a day (the key has no price now)"},
		{plan.RemedyCost{Tier: "free"}, "tier free gives it, at a price the catalogue does not give"},
	} {
		if got := remedyCostWords(&tt.rc); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.rc, got, tt.want)
		}
	}
	for v, want := range map[float64]string{0.3: "0.30", 0.0045: "0.0045", 1234.5: "1,234.50", -2: "-2.00", 0: "0.00"} {
		if got := fmtMoney(v); got != want {
			t.Errorf("fmtMoney(%g) = %q, want %q", v, got, want)
		}
	}
}
