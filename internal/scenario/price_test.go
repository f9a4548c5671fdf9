package scenario

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestPriceRules: a price is per-token for input and output, or per hour,
// not both and not neither; its numbers are within their tags' bounds; one
// currency per scenario; the cache's shares of input add up to at most 1.
func TestPriceRules(t *testing.T) {
	priced := strings.Replace(good, "    token_accounting: max_tokens\n",
		"    token_accounting: max_tokens\n    price: {input_per_mtok: 2.5, output_per_mtok: 10}\n", 1)
	if _, err := Parse([]byte(priced)); err != nil {
		t.Fatalf("a priced quota: %v", err)
	}
	second := "  - {name: second, rpm: 60, price: {currency: EUR, per_hour: 3}}\n"
	tests := []struct {
		name, from, to, path string
	}{
		{"both forms", "output_per_mtok: 10}", "output_per_mtok: 10, per_hour: 4}", "quotas[0].price"},
		{"neither form", "{input_per_mtok: 2.5, output_per_mtok: 10}", "{currency: USD}", "quotas[0].price"},
		{"input missing", "input_per_mtok: 2.5, ", "", "quotas[0].price.input_per_mtok"},
		{"output missing", ", output_per_mtok: 10", ", cached_input_per_mtok: 1", "quotas[0].price.output_per_mtok"},
		{"negative", "input_per_mtok: 2.5", "input_per_mtok: -1", "quotas[0].price.input_per_mtok"},
		{"too large", "output_per_mtok: 10", "output_per_mtok: 2e6", "quotas[0].price.output_per_mtok"},
		{"per hour too large", "{input_per_mtok: 2.5, output_per_mtok: 10}", "{per_hour: 2e9}", "quotas[0].price.per_hour"},
		{"currency form", "{input_per_mtok", "{currency: usd, input_per_mtok", "quotas[0].price.currency"},
		{"unknown field", "{input_per_mtok", "{per_request: 1, input_per_mtok", "quotas[0].price.per_request"},
		{"two currencies", "latency:\n", second + "latency:\n", "quotas[1].price.currency"},
		{"cache shares", "    max_tokens: 800\n", "    max_tokens: 800\n    cached_input_fraction: 0.8\n    cache_write_fraction: 0.3\n", "classes[0].cache_write_fraction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(priced, tt.from, tt.to, 1)
			if doc == priced {
				t.Fatalf("replacement %q not found", tt.from)
			}
			_, err := Parse([]byte(doc))
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("want Errors, got %v", err)
			}
			if !slices.ContainsFunc(errs, func(e FieldError) bool { return e.Path == tt.path }) {
				t.Fatalf("no problem at %s in:\n%v", tt.path, err)
			}
		})
	}
}

// TestCheckPriceAsAScenarioDoes: a price checked apart (a tier's) finds
// the problems a scenario's finds, at the same place under its path.
func TestCheckPriceAsAScenarioDoes(t *testing.T) {
	neg, two := -1.0, 2.0
	tests := []struct {
		price Price
		paths []string
	}{
		{Price{InputPerMtok: &two, OutputPerMtok: &two}, nil},
		{Price{PerHour: &two, Currency: "EUR"}, nil},
		{Price{InputPerMtok: &neg, OutputPerMtok: &two}, []string{"t.input_per_mtok"}},
		{Price{InputPerMtok: &two}, []string{"t.output_per_mtok"}},
		{Price{}, []string{"t"}},
		{Price{PerHour: &two, OutputPerMtok: &two}, []string{"t"}},
		{Price{PerHour: &two, Currency: "dollars"}, []string{"t.currency"}},
	}
	for _, tt := range tests {
		var paths []string
		for _, e := range CheckPrice("t", tt.price) {
			paths = append(paths, e.Path)
		}
		if !slices.Equal(paths, tt.paths) {
			t.Errorf("%+v: problems at %v, want %v", tt.price, paths, tt.paths)
		}
	}
}

// TestPriceDefaultsAndTiers: the currency defaults to USD without writing
// into the scenario, and moving a key to a tier takes the tier's price.
func TestPriceDefaultsAndTiers(t *testing.T) {
	two := 2.0
	s := Scenario{Quotas: []Quota{{Name: "k", RPM: 60, Price: &Price{PerHour: &two}}}}
	if got := s.WithDefaults().Quotas[0].Price.Currency; got != "USD" {
		t.Errorf("default currency %q", got)
	}
	if s.Quotas[0].Price.Currency != "" {
		t.Error("WithDefaults wrote into the scenario's price")
	}
	tier := Quota{Name: "big", RPM: 600, Price: &Price{Currency: "EUR", PerHour: &two}}
	if got := s.Quotas[0].WithLimitsOf(tier); got.Price != tier.Price || got.Name != "k" || got.RPM != 600 {
		t.Errorf("with the tier's limits: %+v", got)
	}
	if got := s.Quotas[0].WithLimitsOf(Quota{Name: "free", RPM: 6}); got.Price != nil {
		t.Errorf("a tier without a price left the key's: %+v", got.Price)
	}
}
