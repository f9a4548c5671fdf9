package scenario

import (
	"reflect"
	"strings"
	"testing"
)

// TestDimensionTableNamesQuotaFields: each dimension reads and writes the
// field of Quota whose JSON name is its own, the table names every limit
// of a quota once, and its periods are the ones the fields' docs give.
func TestDimensionTableNamesQuotaFields(t *testing.T) {
	var q Quota
	seen := map[string]bool{}
	for d := range NumDimensions {
		q.SetLimit(d, float64(d)+1)
		seen[d.String()] = true
		if back, ok := DimensionNamed(d.String()); !ok || back != d {
			t.Errorf("DimensionNamed(%s) = %v, %v", d, back, ok)
		}
	}
	v := reflect.ValueOf(q)
	limits := 0
	for i, f := range reflect.VisibleFields(reflect.TypeFor[Quota]()) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		doc := f.Tag.Get("doc")
		perMinute, perDay := strings.HasSuffix(doc, "per minute."), strings.HasSuffix(doc, "per day.")
		if !perMinute && !perDay {
			if seen[name] {
				t.Errorf("%s is a dimension but its doc %q names no period", name, doc)
			}
			continue
		}
		limits++
		d, ok := DimensionNamed(name)
		if !ok {
			t.Errorf("the limit %s is not in the table", name)
			continue
		}
		if got := v.Field(i).Float(); got != float64(d)+1 {
			t.Errorf("%s: SetLimit wrote %g into the field, want %g", name, got, float64(d)+1)
		}
		if q.Limit(d) != float64(d)+1 || d.Daily() != perDay {
			t.Errorf("%s: limit %g, daily %v; doc %q", name, q.Limit(d), d.Daily(), doc)
		}
	}
	if limits != int(NumDimensions) {
		t.Errorf("Quota has %d limits, the table %d", limits, NumDimensions)
	}
	if NoLimit != "set at least one limit: rpm, tpm, itpm, otpm, rpd or tpd" {
		t.Errorf("NoLimit = %q", NoLimit)
	}
	if ITPM.Rate() != "input tokens/min" || TPD.Rate() != "tokens/day" || RPD.Unit() != "requests" || OTPM.Unit() != "tokens" {
		t.Errorf("rates %s, %s; units %s, %s", ITPM.Rate(), TPD.Rate(), RPD.Unit(), OTPM.Unit())
	}
}

// TestWithLimitsOf puts a tier's limits and accounting on a quota and
// keeps the quota's own settings, clearing the limits the tier lacks.
func TestWithLimitsOf(t *testing.T) {
	q := Quota{Name: "prod", RPM: 100, TPM: 5000, OTPM: 9, Headroom: 0.8, BurstWindowS: 2, ActiveHours: 10, CachedInputFree: true}
	tier := Quota{Name: "big", TPM: 9e6, TPD: 1e9, TokenAccounting: AccountingMaxTokens, Headroom: 0.1}
	want := Quota{Name: "prod", TPM: 9e6, TPD: 1e9, TokenAccounting: AccountingMaxTokens, Headroom: 0.8, BurstWindowS: 2, ActiveHours: 10, CachedInputFree: true}
	if got := q.WithLimitsOf(tier); got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if (Quota{Name: "x"}).HasLimit() || !(Quota{RPD: 1}).HasLimit() {
		t.Error("HasLimit")
	}
}
