package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/configs"
	"github.com/plannerdev/planner/internal/scenario"
)

// Tier is a named set of quota limits from the operator's catalogue, with
// its price: what a key on a given plan or deployment size allows and
// costs. What-if sweeps put a tier's limits, token accounting and price on
// a quota to show what moving to that tier would change and cost
// (scenario.Quota.WithLimitsOf), and remedies name the cheapest tier that
// lifts a class.
//
// A tier is a quota: its name, limits, token_accounting and price are the
// fields of scenario.Quota, under a quota's rules (a limit of zero means
// no such limit; a price is per token or per hour, scenario.CheckPrice),
// beside a description and a provider label. A quota's other settings
// (headroom, burst_window_s, active_hours, cached_input_free) are the
// scenario's, so a tier leaves them out: see TierQuotaKeys.
type Tier struct {
	scenario.Quota `mapstructure:",squash"`
	Description    string `mapstructure:"description" json:"description" validate:"required,max=500" doc:"What the tier is, in words."`
	Provider       string `mapstructure:"provider" json:"provider,omitempty" validate:"max=64" doc:"Label of the provider or deployment the tier belongs to."`
}

// TierQuotaKeys are the keys of a tier's quota: its name, its limits, its
// token accounting and its price.
var TierQuotaKeys = append([]string{"name", "token_accounting", "price"}, scenario.DimensionNames()...)

// tierName is the pattern of tier names, which are quota names, and of
// credential names.
var tierName = regexp.MustCompile(scenario.Bounds().NamePattern)

// DefaultTiers returns the catalogue shipped in configs/tiers.yaml, used
// when the configuration file has no tiers of its own.
func DefaultTiers() ([]Tier, error) {
	var doc struct {
		Tiers []Tier `json:"tiers"`
	}
	js, err := yaml.YAMLToJSON(configs.Tiers)
	if err != nil {
		return nil, fmt.Errorf("default tier catalogue: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("default tier catalogue: %w", err)
	}
	return doc.Tiers, nil
}

// LoadTiers is the tier catalogue of the configuration that Load reads
// (the file of the flag "config" or PLANNER_CONFIG, else the built-in
// catalogue), for the commands that need only the catalogue: a problem
// with another setting's value does not refuse it. The error is Problems
// when its tiers are invalid or the file has a key that no setting takes,
// wherever it is: a misspelt key (tier: for tiers:) would otherwise leave
// the built-in catalogue in place without a word.
func LoadTiers(flags *pflag.FlagSet) ([]Tier, error) {
	cfg, err := Load(flags)
	var ps Problems
	if !errors.As(err, &ps) {
		return cfg.Tiers, err
	}
	var tiers Problems
	for _, p := range ps {
		if p.Path == "tiers" || strings.HasPrefix(p.Path, "tiers[") || strings.HasPrefix(p.Path, "tiers.") || p.Message == unknownSetting {
			tiers = append(tiers, p)
		}
	}
	if len(tiers) > 0 {
		return nil, tiers
	}
	return cfg.Tiers, nil
}

// Quotas are the tiers as the planning engine and what-if variations take
// a catalogue: each tier's quota, named by the tier.
func Quotas(tiers []Tier) []scenario.Quota {
	out := make([]scenario.Quota, len(tiers))
	for i, t := range tiers {
		out[i] = t.Quota
	}
	return out
}
