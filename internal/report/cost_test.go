package report

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
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

// TestCostOfTasks: an agent task class's cost per 1,000 counts tasks, and a
// key or plan that carries tasks and requests says both. By hand: a task of
// 4 calls of 101 output tokens, each carrying the earlier output and 399
// tool result tokens, reads 1,000 + 1,500 + 2,000 + 2,500 = 7,000 input
// and writes 404 output tokens: (7,000 × 2.50 + 404 × 10) / 10⁶ = 0.02154,
// 21.54 per 1,000 tasks and 0.02154 × 0.5 × 3,600 = 38.77 an hour; a
// request of 1,000 in and 100 out costs 0.0035, 3.50 per 1,000 requests.
// The key's day is 0.02154 × 43,200 + 0.0035 × 86,400 = 1,232.93 over
// 129,600 arrivals, 9.51 per 1,000.
func TestCostOfTasks(t *testing.T) {
	s, err := scenario.Parse([]byte(`
quotas:
  - name: k
    rpm: 600
    tpm: 1000000
    price: {input_per_mtok: 2.5, output_per_mtok: 10}
latency:
  ttft_ms: {fixed: 500}
  tpot_ms: {fixed: 20}
  knee: 40
classes:
  - name: agent
    quota: k
    mode: interactive
    demand: {rps: 0.5}
    input_tokens: {fixed: 1000}
    output_tokens: {fixed: 101}
    task:
      calls: {fixed: 4}
      tool_ms: {fixed: 1000}
      tool_result_tokens: {fixed: 399}
  - name: chat
    quota: k
    mode: interactive
    demand: {rps: 1}
    input_tokens: {fixed: 1000}
    output_tokens: {fixed: 100}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(plan.Options{}).Plan(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	var table, md, html bytes.Buffer
	if err := WriteTable(&table, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteReportHTML(&html, ReportInput{Scenario: s, Plan: p}); err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(table.String()), " ")
	for _, w := range []string{
		"cost: 38.77 USD an hour, 930.53 a day, 21.54 per 1,000 tasks (pay as you go)",
		"cost: 12.60 USD an hour, 302.40 a day, 3.50 per 1,000 requests (pay as you go)",
		"cost: 51.37 USD an hour, 1,232.93 a day, 9.51 per 1,000 requests and tasks (pay as you go)",
	} {
		if !strings.Contains(flat, w) {
			t.Errorf("table lacks %q:\n%s", w, table.String())
		}
	}
	if w := "| | Pricing | Per hour | Per day | Per 1,000 requests and tasks | Cache saves a day |"; !strings.Contains(md.String(), w) {
		t.Errorf("markdown lacks %q:\n%s", w, md.String())
	}
	if w := `<th class="n">Per 1,000 requests and tasks</th>`; !strings.Contains(html.String(), w) {
		t.Errorf("html lacks %q", w)
	}
}
