package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// The cost of a plan (docs/concepts.md, "Cost") in every rendering: the
// same sentences in the table, the Markdown and the HTML report, and one
// table of classes, keys and the total in the Markdown and HTML.

// fmtMoney writes an amount with two decimals and thousands separators,
// or with four significant digits below 1 (a price per request is often a
// fraction of a cent).
func fmtMoney(v float64) string {
	if v != 0 && math.Abs(v) < 1 {
		// Four significant digits as decimals, never an exponent
		// (0.00005, not 5e-05), without trailing zeros.
		s := strconv.FormatFloat(v, 'f', max(2, 3-int(math.Floor(math.Log10(math.Abs(v))))), 64)
		s = strings.TrimRight(s, "0")
		if _, frac, _ := strings.Cut(s, "."); len(frac) < 2 {
			s += strings.Repeat("0", 2-len(frac)) // 0.3 as 0.30, as a price is written
		}
		return s
	}
	return groupedDecimal(v, strconv.FormatFloat(math.Abs(v), 'f', 2, 64))
}

// fmtPrice writes a price as fmtMoney does when that shows it exactly,
// and otherwise with every digit it was written with (3.125, not 3.12): a
// price rounded to the cent is another price.
func fmtPrice(v float64) string {
	s := fmtMoney(v)
	if x, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64); err == nil && x == v {
		return s
	}
	return groupedDecimal(v, strconv.FormatFloat(math.Abs(v), 'f', -1, 64))
}

// groupedDecimal is s, the decimal digits of |v|, with thousands
// separators and v's sign.
func groupedDecimal(v float64, s string) string {
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if !hasFrac {
		return b.String()
	}
	return b.String() + "." + frac
}

// pricingWords names how a cost is billed.
var pricingWords = map[string]string{
	plan.PricingPayAsYouGo:  "pay as you go",
	plan.PricingProvisioned: "provisioned",
	plan.PricingMixed:       "pay as you go and provisioned",
}

// costWords is a cost in one sentence without a final stop: "48.60 USD
// an hour, 1,166.40 a day, 6.75 per 1,000 requests (pay as you go); the
// prompt cache saves 583.20 a day". unit names what the cost per 1,000
// counts (costUnit).
func costWords(c *plan.Cost, unit string) string {
	s := fmt.Sprintf("%s %s an hour, %s a day", fmtMoney(c.PerHour), c.Currency, fmtMoney(c.PerDay))
	if c.PerBatch != nil && *c.PerBatch != c.PerDay {
		s += fmt.Sprintf(", %s the whole batch", fmtMoney(*c.PerBatch))
	}
	if c.Per1KRequests != nil {
		s += fmt.Sprintf(", %s per 1,000 %s", fmtMoney(*c.Per1KRequests), unit)
	}
	s += " (" + pricingWords[c.Pricing] + ")"
	switch {
	case c.CacheSavingPerDay > 0:
		s += fmt.Sprintf("; the prompt cache saves %s a day", fmtMoney(c.CacheSavingPerDay))
	case c.CacheSavingPerDay < 0:
		s += fmt.Sprintf("; the prompt cache's writes cost %s a day more than its reads save", fmtMoney(-c.CacheSavingPerDay))
	}
	return s
}

// totalWords is the plan's cost in one sentence, with the keys left out.
func totalWords(c *plan.Cost, unit string) string {
	s := "the plan costs " + costWords(c, unit)
	if len(c.Unpriced) > 0 {
		s += "; keys without a price, not counted: " + strings.Join(c.Unpriced, ", ")
	}
	return s
}

// costUnit names what a cost per 1,000 counts over the priced classes that
// keep says it covers: an agent task class's demand, and so its cost,
// counts tasks (docs/concepts.md, "Agent tasks"), any other's requests;
// a key or plan with both counts each of them once.
func costUnit(cs []plan.ClassPlan, keep func(plan.ClassPlan) bool) string {
	tasks, requests := false, false
	for _, c := range cs {
		if c.Cost == nil || !keep(c) {
			continue
		}
		if c.Task != nil {
			tasks = true
		} else {
			requests = true
		}
	}
	switch {
	case tasks && requests:
		return "requests and tasks"
	case tasks:
		return "tasks"
	}
	return "requests"
}

// classUnit is what class c's cost per 1,000 counts.
func classUnit(c plan.ClassPlan) string {
	return costUnit([]plan.ClassPlan{c}, func(plan.ClassPlan) bool { return true })
}

// keyUnit is what the cost per 1,000 of the key named key counts.
func keyUnit(p *plan.Plan, key string) string {
	return costUnit(p.Classes, func(c plan.ClassPlan) bool { return c.Quota == key })
}

// planUnit is what the plan's cost per 1,000 counts.
func planUnit(p *plan.Plan) string {
	return costUnit(p.Classes, func(plan.ClassPlan) bool { return true })
}

// remedyCostWords is what a remedy costs, in words: "tier large gives it:
// 777.60 USD a day, 155.52 more than now".
func remedyCostWords(rc *plan.RemedyCost) string {
	what := "with the limit raised"
	if rc.Tier != "" {
		what = "tier " + rc.Tier + " gives it"
	}
	switch {
	case rc.PerDay == nil:
		return what + ", at a price the catalogue does not give"
	case rc.ChangePerDay == nil:
		return fmt.Sprintf("%s: %s %s a day (the key has no price now)", what, fmtMoney(*rc.PerDay), rc.Currency)
	case *rc.ChangePerDay > 0:
		return fmt.Sprintf("%s: %s %s a day, %s more than now", what, fmtMoney(*rc.PerDay), rc.Currency, fmtMoney(*rc.ChangePerDay))
	case *rc.ChangePerDay < 0:
		return fmt.Sprintf("%s: %s %s a day, %s less than now", what, fmtMoney(*rc.PerDay), rc.Currency, fmtMoney(-*rc.ChangePerDay))
	}
	return fmt.Sprintf("%s: %s %s a day, as now", what, fmtMoney(*rc.PerDay), rc.Currency)
}

// remedyWords is a remedy's change and, when it has one, its cost.
func remedyWords(r plan.Remedy) string {
	if r.Cost == nil {
		return r.Change
	}
	return r.Change + "; " + remedyCostWords(r.Cost)
}

// costRow is one row of the cost table: a class, a key or the total.
type costRow struct {
	Name, Pricing, PerHour, PerDay, Per1K, CacheSaving string
}

// costRows are the rows of the cost table of p, nil when it has no cost.
func costRows(p *plan.Plan) []costRow {
	if p.Cost == nil {
		return nil
	}
	row := func(name string, c *plan.Cost) costRow {
		r := costRow{Name: name, Pricing: pricingWords[c.Pricing], PerHour: fmtMoney(c.PerHour), PerDay: fmtMoney(c.PerDay),
			Per1K: "-", CacheSaving: fmtMoney(c.CacheSavingPerDay)}
		if c.Per1KRequests != nil {
			r.Per1K = fmtMoney(*c.Per1KRequests)
		}
		if c.PerBatch != nil && *c.PerBatch != c.PerDay {
			r.PerDay += " (batch " + fmtMoney(*c.PerBatch) + ")"
		}
		return r
	}
	var rows []costRow
	for _, c := range p.Classes {
		if c.Cost != nil {
			rows = append(rows, row("class "+c.Name, c.Cost))
		}
	}
	for _, q := range p.Quotas {
		if q.Cost != nil {
			rows = append(rows, row("key "+q.Name, q.Cost))
		}
	}
	return append(rows, row("total", p.Cost))
}

// writeCostMarkdown writes the cost section of a plan's Markdown.
func writeCostMarkdown(w io.Writer, p *plan.Plan) {
	rows := costRows(p)
	if rows == nil {
		return
	}
	fmt.Fprintf(w, "\n## Cost\n\nIn %s, at the stated demand; a day is each key's active hours.\n\n", p.Cost.Currency)
	fmt.Fprintf(w, "| | Pricing | Per hour | Per day | Per 1,000 %s | Cache saves a day |\n", planUnit(p))
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", mdText(r.Name), r.Pricing, r.PerHour, r.PerDay, r.Per1K, r.CacheSaving)
	}
	if len(p.Cost.Unpriced) > 0 {
		fmt.Fprintf(w, "\nKeys without a price, not counted: %s.\n", mdText(strings.Join(p.Cost.Unpriced, ", ")))
	}
}

// TierFormats are the formats of WriteTiers.
var TierFormats = []string{FormatTable, FormatJSON, FormatYAML, FormatCSV}

// WriteTiers writes a tier catalogue in one of TierFormats: a table of
// each tier's limits, token accounting and price, one CSV row per tier, or
// the catalogue as GET /v1/tiers returns it.
func WriteTiers(w io.Writer, tiers []config.Tier, format string) error {
	if format == FormatCSV {
		return writeTiersCSV(w, tiers)
	}
	if format != FormatTable {
		return WriteData(w, struct {
			Tiers []config.Tier `json:"tiers"`
		}{tiers}, format)
	}
	ew := &errWriter{w: w}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIER\tPROVIDER\tLIMITS\tACCOUNTING\tPRICE")
	for _, t := range tiers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, dashIfEmpty(t.Provider), tierLimits(t.Quota), t.TokenAccounting, priceWords(t.Price))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range tiers {
		wrap(ew, t.Name+": ", t.Description)
	}
	return ew.err
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// tierLimits are a tier's limits: "rpm 500, tpm 200,000".
func tierLimits(q scenario.Quota) string {
	var parts []string
	for d := range scenario.NumDimensions {
		if l := q.Limit(d); l > 0 {
			parts = append(parts, d.String()+" "+fmtNum(l))
		}
	}
	return strings.Join(parts, ", ")
}

// priceWords is a price in a few words: "USD 2.50 in, 0.25 cached, 10.00
// out /Mtok" or "USD 12.00 /hour", each as written (fmtPrice); "-"
// without one.
func priceWords(p *scenario.Price) string {
	if p == nil {
		return "-"
	}
	if p.Provisioned() {
		return fmt.Sprintf("%s %s /hour", p.CurrencyOr(), fmtPrice(*p.PerHour))
	}
	parts := []string{fmtPrice(*p.InputPerMtok) + " in"}
	if p.CachedInputPerMtok != nil {
		parts = append(parts, fmtPrice(*p.CachedInputPerMtok)+" cached")
	}
	if p.CacheWritePerMtok != nil {
		parts = append(parts, fmtPrice(*p.CacheWritePerMtok)+" cache write")
	}
	parts = append(parts, fmtPrice(*p.OutputPerMtok)+" out")
	return p.CurrencyOr() + " " + strings.Join(parts, ", ") + " /Mtok"
}

// rankingRows are a tier ranking's rows: tier, whether it fits, the plan's
// cost a day, the key's and per 1,000 requests.
func rankingRows(r *plan.TierRanking) [][]string {
	rows := [][]string{{"TIER", "FITS", "PLAN/DAY", "KEY/DAY", "KEY PER 1K"}}
	for _, t := range r.Tiers {
		fits := yesNo(t.Fits)
		if len(t.Problems) > 0 {
			fits = "invalid"
		}
		row := []string{t.Tier, fits, "-", "-", "-"}
		if t.Cost != nil {
			row[2] = fmtMoney(t.Cost.PerDay) + " " + t.Cost.Currency
			row[3] = fmtMoney(t.KeyCost.PerDay)
			if t.KeyCost.Per1KRequests != nil {
				row[4] = fmtMoney(*t.KeyCost.Per1KRequests)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// writeRanking writes a tier ranking after a what-if grid: its table and
// its summary.
func writeRanking(w io.Writer, r *plan.TierRanking, md bool) error {
	rows := rankingRows(r)
	if md {
		fmt.Fprintf(w, "\nTiers on %s by cost (cheapest first):\n\n", mdText(r.Path))
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(rows[0], " | "), strings.Repeat("---|", len(rows[0])))
		for _, row := range rows[1:] {
			fmt.Fprintf(w, "| %s |\n", strings.Join(mdCells(row), " | "))
		}
		fmt.Fprintf(w, "\n%s.\n", mdText(upperFirst(r.Summary)))
		return nil
	}
	fmt.Fprintf(w, "\ntiers on %s by cost (cheapest first):\n", r.Path)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	wrap(w, "", upperFirst(r.Summary)+".")
	return nil
}

// writeTiersCSV writes one row per tier: its name, provider, token
// accounting, every limit (empty when the tier has none) and its prices
// (empty when not given), unrounded.
func writeTiersCSV(w io.Writer, tiers []config.Tier) error {
	header := []string{"tier", "provider", "token_accounting"}
	for d := range scenario.NumDimensions {
		header = append(header, d.String())
	}
	header = append(header, "currency", "input_per_mtok", "cached_input_per_mtok", "cache_write_per_mtok", "output_per_mtok", "per_hour", "description")
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("write csv header: %w", err)
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return num(*v)
	}
	for _, t := range tiers {
		row := []string{t.Name, t.Provider, t.TokenAccounting}
		for d := range scenario.NumDimensions {
			if l := t.Quota.Limit(d); l > 0 {
				row = append(row, num(l))
			} else {
				row = append(row, "")
			}
		}
		var currency string
		var p scenario.Price
		if t.Price != nil {
			p, currency = *t.Price, t.Price.CurrencyOr()
		}
		row = append(row, currency, opt(p.InputPerMtok), opt(p.CachedInputPerMtok), opt(p.CacheWritePerMtok), opt(p.OutputPerMtok), opt(p.PerHour), t.Description)
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write csv row: %w", err)
		}
	}
	cw.Flush()
	return cw.Error()
}
