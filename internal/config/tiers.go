package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/configs"
	"github.com/plannerdev/planner/internal/scenario"
)

// Tier is a named set of quota limits from the operator's catalogue: what a
// key on a given plan or deployment size allows. What-if sweeps put a tier's
// limits on a quota to show what moving to that tier would change. A limit of
// zero means the tier has no such limit. Its name and limits have a quota's
// bounds (scenario.Bounds): the validation tags quotaname and limit_rpm,
// limit_tpm, ... are made from that table.
type Tier struct {
	Name            string  `mapstructure:"name" json:"name" validate:"required,quotaname" doc:"Name that what-if variations refer to." example:"example-small"`
	Description     string  `mapstructure:"description" json:"description" validate:"required,max=500" doc:"What the tier is, in words."`
	Provider        string  `mapstructure:"provider" json:"provider,omitempty" validate:"max=64" doc:"Label of the provider or deployment the tier belongs to."`
	RPM             float64 `mapstructure:"rpm" json:"rpm,omitempty" validate:"limit_rpm" doc:"Requests per minute."`
	TPM             float64 `mapstructure:"tpm" json:"tpm,omitempty" validate:"limit_tpm" doc:"Tokens (input + output) per minute."`
	ITPM            float64 `mapstructure:"itpm" json:"itpm,omitempty" validate:"limit_itpm" doc:"Input tokens per minute."`
	OTPM            float64 `mapstructure:"otpm" json:"otpm,omitempty" validate:"limit_otpm" doc:"Output tokens per minute."`
	RPD             float64 `mapstructure:"rpd" json:"rpd,omitempty" validate:"limit_rpd" doc:"Requests per day."`
	TPD             float64 `mapstructure:"tpd" json:"tpd,omitempty" validate:"limit_tpd" doc:"Tokens per day."`
	TokenAccounting string  `mapstructure:"token_accounting" json:"token_accounting" validate:"oneof=actual max_tokens" enum:"actual,max_tokens" doc:"How the provider counts output tokens: the tokens produced, or max_tokens reserved at admission."`
}

func (t Tier) hasLimit() bool {
	return t.RPM > 0 || t.TPM > 0 || t.ITPM > 0 || t.OTPM > 0 || t.RPD > 0 || t.TPD > 0
}

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
