package export

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// liteLLMConfig is the part of a LiteLLM proxy configuration that an
// export fills (docs.litellm.ai/docs/proxy/configs): the model list and
// the router's settings.
type liteLLMConfig struct {
	ModelList      []liteLLMDeployment `yaml:"model_list"`
	RouterSettings liteLLMRouter       `yaml:"router_settings"`
}

type liteLLMDeployment struct {
	ModelName     string        `yaml:"model_name"`
	LiteLLMParams liteLLMParams `yaml:"litellm_params"`
	ModelInfo     liteLLMInfo   `yaml:"model_info"`
}

type liteLLMParams struct {
	Model               string `yaml:"model"`
	APIKey              string `yaml:"api_key"`
	RPM                 int    `yaml:"rpm"`
	TPM                 int    `yaml:"tpm,omitempty"`
	MaxParallelRequests int    `yaml:"max_parallel_requests"`
}

type liteLLMInfo struct {
	ID  string      `yaml:"id"`
	SLO *liteLLMSLO `yaml:"slo,omitempty"`
}

// liteLLMSLO is a class's SLO as metadata of its deployment (LiteLLM
// returns model_info's keys from GET /model/info and enforces none of
// them): every target the class gives, in milliseconds, and the
// percentile they bind.
type liteLLMSLO struct {
	TTFTMs     float64 `yaml:"ttft_ms,omitempty"`
	E2EMs      float64 `yaml:"e2e_ms,omitempty"`
	TPOTMs     float64 `yaml:"tpot_ms,omitempty"`
	TaskE2EMs  float64 `yaml:"task_e2e_ms,omitempty"`
	Percentile float64 `yaml:"percentile"`
}

// sloInfo is the SLO metadata of class c, nil without an SLO.
func sloInfo(c scenario.Class) *liteLLMSLO {
	if c.SLO == nil {
		return nil
	}
	s := *c.SLO
	return &liteLLMSLO{TTFTMs: s.TTFT(), E2EMs: s.E2E(), TPOTMs: s.TPOT(), TaskE2EMs: s.TaskE2E(), Percentile: s.At()}
}

type liteLLMRouter struct {
	RoutingStrategy string `yaml:"routing_strategy"`
}

// writeLiteLLM writes a LiteLLM router configuration with one deployment
// per class: model_name is the class's name (its requests go to the proxy
// with model set to it), the key is its quota's (the environment variable
// NAME_API_KEY, of the quota's name in capitals), and
//
//   - max_parallel_requests is the class's pool: LiteLLM sizes it from
//     rpm or tpm alone when none is given, with no latency term;
//   - rpm is the class's allotment of its key's rpm or, on a key without
//     one, its pacing rate a minute, rounded down (at least 1);
//   - tpm is its allotment of the key's tpm, rounded down, when the key
//     has one;
//   - model_info.slo is the class's SLO, every target and the percentile
//     they bind, for whoever reads GET /model/info (LiteLLM enforces
//     none).
//
// An agent task class's pool counts tasks, and a task has at most one
// call in flight, so its pool also caps the calls in flight; its rpm and
// pacing are in calls.
//
// A class for which no pool fits (pool 0) has no deployment: LiteLLM reads
// a max_parallel_requests of 0 as none. Limits LiteLLM does not enforce
// (itpm, otpm, rpd, tpd) are left to the clients' pacing.
func writeLiteLLM(w io.Writer, sc scenario.Scenario, p *plan.Plan, model string) error {
	classes, err := classesOf(sc, p)
	if err != nil {
		return err
	}
	quotas := map[string]plan.QuotaPlan{}
	for _, q := range p.Quotas {
		quotas[q.Name] = q
	}
	if err := distinctKeyEnvs(sc, classes); err != nil {
		return err
	}
	cfg := liteLLMConfig{ModelList: []liteLLMDeployment{}, RouterSettings: liteLLMRouter{RoutingStrategy: "simple-shuffle"}}
	var left []string
	for _, c := range classes {
		cp := c.plan
		if cp.Pool < 1 {
			left = append(left, cp.Name)
			continue
		}
		q, ok := quotaOf(sc, cp.Quota)
		if !ok {
			return fmt.Errorf("export: the class %q uses the key %q, which is not in the scenario", cp.Name, cp.Quota)
		}
		allot := allotment(quotas[cp.Quota], cp.Name)
		params := liteLLMParams{Model: model, APIKey: "os.environ/" + KeyEnv(cp.Quota), MaxParallelRequests: cp.Pool}
		if q.Limit(scenario.RPM) > 0 {
			params.RPM = wholeAtLeastOne(allot[scenario.RPM.String()])
		} else {
			params.RPM = wholeAtLeastOne(cp.Pacing.RateRPS * 60)
		}
		if q.Limit(scenario.TPM) > 0 {
			params.TPM = wholeAtLeastOne(allot[scenario.TPM.String()])
		}
		cfg.ModelList = append(cfg.ModelList, liteLLMDeployment{ModelName: cp.Name, LiteLLMParams: params, ModelInfo: liteLLMInfo{ID: cp.Name, SLO: sloInfo(c.spec)}})
	}
	var b strings.Builder
	b.WriteString("# LiteLLM router settings from a capacity plan by planner (docs/exports.md): one\n")
	b.WriteString("# deployment per class, whose requests name the class as their model. rpm and tpm\n")
	b.WriteString("# are each class's share of its key, max_parallel_requests its pool. Set model to\n")
	b.WriteString("# the provider's (planner export --model) and each key's environment variable.\n")
	b.WriteString("# Limits are counted per proxy instance unless the router shares them (redis).\n")
	b.WriteString("# model_info.slo is each class's SLO, for GET /model/info: LiteLLM enforces none.\n")
	if len(left) > 0 {
		fmt.Fprintf(&b, "# Left out, as no pool fits them (see their remedies): %s.\n", strings.Join(left, ", "))
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(cfg); err != nil {
		return fmt.Errorf("encode the LiteLLM settings: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encode the LiteLLM settings: %w", err)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// KeyEnv is the environment variable that holds a quota's key in the
// exported LiteLLM settings: its name in capitals, with every character
// but a letter or digit as '_', then _API_KEY ("prod" is PROD_API_KEY).
func KeyEnv(quota string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, quota) + "_API_KEY"
}

// KeyEnvClash is a scenario whose two keys would read their credential
// from one environment variable of the LiteLLM settings, which would
// then send both keys' requests with one of them.
type KeyEnvClash struct {
	Env   string // the variable, TEAM_A_API_KEY
	Quota [2]int // the indexes of the two quotas in the scenario
	Names [2]string
}

func (e *KeyEnvClash) Error() string {
	return fmt.Sprintf("export: the keys %q and %q would both read %s; rename one of them so that their names differ in more than case and punctuation", e.Names[0], e.Names[1], e.Env)
}

// distinctKeyEnvs is a *KeyEnvClash when two of the scenario's keys that
// the settings' deployments use (a class with a pool) share a KeyEnv, nil
// otherwise.
func distinctKeyEnvs(sc scenario.Scenario, classes []classPair) error {
	seen := map[string]int{}
	for j, q := range sc.Quotas {
		if !slices.ContainsFunc(classes, func(c classPair) bool { return c.plan.Pool >= 1 && c.plan.Quota == q.Name }) {
			continue
		}
		env := KeyEnv(q.Name)
		if i, ok := seen[env]; ok {
			return &KeyEnvClash{Env: env, Quota: [2]int{i, j}, Names: [2]string{sc.Quotas[i].Name, q.Name}}
		}
		seen[env] = j
	}
	return nil
}

// wholeAtLeastOne is v rounded down, and at least 1: LiteLLM reads a limit
// of 0 as none.
func wholeAtLeastOne(v float64) int {
	if !(v >= 1) {
		return 1
	}
	if v >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int(math.Floor(v))
}
