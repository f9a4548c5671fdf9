package export

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
)

// The alerts of the rules file, one per class and target (latency), per
// class (429s) or per key and limit (use). The TTFT and E2E alerts keep
// their first names whatever the SLO's percentile, which their
// percentile label gives.
const (
	AlertTTFT    = "PlannerTTFTP95AboveSLO"
	AlertE2E     = "PlannerE2EP95AboveSLO"
	AlertTPOT    = "PlannerTPOTAboveSLO"
	AlertTaskE2E = "PlannerTaskE2EAboveSLO"
	Alert429     = "Planner429RateAbovePlan"
	AlertQuota   = "PlannerQuotaUseNearLimit"
)

// RulesGroup is the name of the rules file's one group.
const RulesGroup = "planner"

// ruleFile is a Prometheus rules file
// (prometheus.io/docs/prometheus/latest/configuration/alerting_rules).
type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name  string `yaml:"name"`
	Rules []rule `yaml:"rules"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// writeRules writes the alerting rules of a plan:
//
//   - per class and target of its SLO (ttft_ms, e2e_ms, tpot_ms and,
//     for an agent task class, task_e2e_ms), the quantile at the SLO's
//     percentile over the window (histogram_quantile at percentile/100
//     over the histogram's _bucket rates: TTFT, E2E, TPOT, or the task
//     duration) above the target;
//   - per class, the share of its requests answered 429 above the share
//     with which a simulated run of a plan holds (simulate.MaxLimitedShare,
//     docs/simulate.md): a paced plan expects next to none;
//   - per key and limit, the use of its classes above the plan's usable
//     share (the limit times the key's headroom): requests from the
//     requests counter, tokens from the token histogram's _sum (input,
//     output or both as the limit counts them; with token_accounting
//     max_tokens, output as max_tokens per request sent), per minute over
//     the window, per day over a day.
//
// Each alert's annotations carry the plan's numbers: the pool, what binds
// it, the predictions and the allotments.
func writeRules(w io.Writer, sc scenario.Scenario, p *plan.Plan, m Metrics) error {
	m = m.withDefaults()
	classes, err := classesOf(sc, p)
	if err != nil {
		return err
	}
	for name := range m.Classes {
		if !hasClass(classes, name) {
			return fmt.Errorf("the metrics file: classes.%s: no class named %q in the plan", name, name)
		}
	}
	sel := func(c string) string {
		if s, ok := m.Classes[c]; ok {
			return s
		}
		return m.ClassLabel + "=" + promString(c)
	}
	var rules []rule
	for _, c := range classes {
		cp := c.plan
		labels := map[string]string{"severity": "warning", "class": cp.Name}
		where := fmt.Sprintf("pool %d, bound by %s", cp.Pool, cp.BindingConstraint)
		slo := sloOf(c.spec)
		at := "p" + number(slo.At())
		pr := cp.Predicted
		ttft, e2e, tpot := pr.TTFTP95Ms, pr.E2EP95Ms, pr.TPOTMsAtPercentile
		if pr.Percentile != nil {
			ttft, e2e = pr.TTFTMsAtPercentile, pr.E2EMsAtPercentile
		}
		latLabels := map[string]string{"severity": "warning", "class": cp.Name, "percentile": number(slo.At())}
		for _, lat := range []struct {
			alert, what, metric string
			slo                 float64
			predicted           *float64
			none                string // what the plan says without a prediction
		}{
			{AlertTTFT, "TTFT", m.TTFT, slo.TTFT(), ttft, unbounded},
			{AlertE2E, "E2E", m.E2E, slo.E2E(), e2e, unbounded},
			{AlertTPOT, "TPOT", m.TPOT, slo.TPOT(), tpot, "no TPOT of its own (the plan predicts TPOT where the SLO names its percentile)"},
			// A task class's E2E prediction is its task's (docs/concepts.md,
			// "Agent tasks").
			{AlertTaskE2E, "task E2E", m.TaskE2E, slo.TaskE2E(), e2e, unbounded},
		} {
			if lat.slo <= 0 {
				continue
			}
			rules = append(rules, rule{
				Alert: lat.alert,
				Expr: fmt.Sprintf("histogram_quantile(%s, sum by (le) (rate(%s[%s]))) > %s",
					promNumber(slo.At()/100), series(lat.metric+"_bucket", sel(cp.Name)), m.Window, promNumber(lat.slo/1000)),
				For:    m.For,
				Labels: latLabels,
				Annotations: map[string]string{
					"summary": fmt.Sprintf("%s: %s %s above its SLO of %s ms", cp.Name, lat.what, at, number(lat.slo)),
					"description": fmt.Sprintf("%s %s is {{ $value | humanizeDuration }} over %s; the SLO is %s ms, and the plan (%s) predicts %s.",
						lat.what, at, m.Window, number(lat.slo), where, predictedMs(lat.predicted, lat.none)),
				},
			})
		}
		requests := series(m.Requests, sel(cp.Name))
		rules = append(rules, rule{
			Alert: Alert429,
			Expr: fmt.Sprintf("sum(rate(%s[%s])) / sum(rate(%s[%s])) > %s",
				series(m.Requests, sel(cp.Name), m.RateLimited), m.Window, requests, m.Window, promNumber(simulate.MaxLimitedShare)),
			For:    m.For,
			Labels: labels,
			Annotations: map[string]string{
				"summary": fmt.Sprintf("%s: more than %s %% of requests answered 429", cp.Name, number(simulate.MaxLimitedShare*100)),
				"description": fmt.Sprintf("{{ $value | humanizePercentage }} of the requests over %s were answered 429. A plan holds with at most %s %% (docs/simulate.md); "+
					"the plan (%s) paces the class at %s req/s with bursts of %d and retries %d times at most.",
					m.Window, number(simulate.MaxLimitedShare*100), where, number(cp.Pacing.RateRPS), cp.Pacing.Burst, max(cp.Retry.MaxAttempts-1, 0)),
			},
		})
	}
	for _, qp := range p.Quotas {
		q, ok := quotaOf(sc, qp.Name)
		if !ok {
			return fmt.Errorf("export: the plan's key %q is not in the scenario", qp.Name)
		}
		var users []classPair
		for _, c := range classes {
			if c.plan.Quota == qp.Name {
				users = append(users, c)
			}
		}
		for d := range scenario.NumDimensions {
			limit, usable := qp.Limits[d.String()], qp.Usable[d.String()]
			if limit <= 0 || usable <= 0 || len(users) == 0 {
				continue
			}
			rules = append(rules, rule{
				Alert:  AlertQuota,
				Expr:   useExpr(d, q, users, sel, m) + " > " + promNumber(usable),
				For:    m.For,
				Labels: map[string]string{"severity": "warning", "quota": qp.Name, "limit": d.String()},
				Annotations: map[string]string{
					"summary": fmt.Sprintf("key %s: %s above the plan's usable %s", qp.Name, d, number(usable)),
					"description": fmt.Sprintf("The key's classes use {{ $value | humanize }} %s; the plan uses at most %s of the limit of %s (headroom %s) and expects %s %% of it at the stated demand.",
						d.Rate(), number(usable), number(limit), number(usable/limit), number(100*qp.Utilization[d.String()])),
				},
			})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Prometheus alerting rules from a capacity plan by planner (docs/exports.md).\n")
	fmt.Fprintf(&b, "# TTFT: %s (a histogram, seconds)\n", m.TTFT)
	fmt.Fprintf(&b, "# E2E: %s (a histogram, seconds)\n", m.E2E)
	fmt.Fprintf(&b, "# TPOT: %s (a histogram, seconds)\n", m.TPOT)
	fmt.Fprintf(&b, "# an agent task's duration: %s (a histogram, seconds)\n", m.TaskE2E)
	fmt.Fprintf(&b, "# requests: %s, answered 429: %s\n", m.Requests, m.RateLimited)
	fmt.Fprintf(&b, "# tokens: %s_sum by %s\n", m.Tokens, m.TokenTypeLabel)
	fmt.Fprintf(&b, "# a class: %s=\"NAME\" unless the metrics file gives it a selector\n", m.ClassLabel)
	fmt.Fprintf(&b, "# Check with: promtool check rules FILE\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(ruleFile{Groups: []ruleGroup{{Name: RulesGroup, Rules: rules}}}); err != nil {
		return fmt.Errorf("encode the rules: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encode the rules: %w", err)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// useExpr is the PromQL of what the classes of key q use of limit d: per
// minute over the window for a per-minute limit, over a day for a daily
// one; a sum of one term per class, each 0 while the class has no series.
func useExpr(d scenario.Dimension, q scenario.Quota, users []classPair, sel func(string) string, m Metrics) string {
	over, scale := m.Window, " * 60"
	fn := "rate"
	if d.Daily() {
		over, scale, fn = "1d", "", "increase"
	}
	term := func(s string) string { return fmt.Sprintf("(sum(%s(%s[%s])) or vector(0))", fn, s, over) }
	reserved := q.TokenAccounting == scenario.AccountingMaxTokens
	var terms []string
	for _, c := range users {
		s := sel(c.plan.Name)
		tokens := func(kind string) string {
			return term(series(m.Tokens+"_sum", s, m.TokenTypeLabel+"="+promString(kind)))
		}
		// Output as the key counts it: produced, or max_tokens reserved
		// for every request sent.
		output := tokens("output")
		if reserved {
			output = term(series(m.Requests, s)) + " * " + strconv.Itoa(c.spec.MaxTokens)
		}
		switch d.Charge() {
		case scenario.ChargeRequest:
			terms = append(terms, term(series(m.Requests, s)))
		case scenario.ChargeInput:
			terms = append(terms, tokens("input"))
		case scenario.ChargeOutput:
			terms = append(terms, output)
		case scenario.ChargeTokens:
			if reserved {
				terms = append(terms, tokens("input"), output)
			} else {
				terms = append(terms, term(series(m.Tokens+"_sum", s)))
			}
		}
	}
	return "(" + strings.Join(terms, " + ") + ")" + scale
}

// unbounded is what the plan predicts of a latency whose queue grows
// without bound.
const unbounded = "no bound (the queue grows without one at the stated demand)"

// series is a selector: the metric with the matchers that are given.
func series(metric string, matchers ...string) string {
	var ms []string
	for _, x := range matchers {
		if x = strings.TrimSpace(x); x != "" {
			ms = append(ms, x)
		}
	}
	return metric + "{" + strings.Join(ms, ", ") + "}"
}

// promString is s as a PromQL string literal.
func promString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// promNumber is v as a PromQL number literal, in full.
func promNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// number is v for people: at most four significant digits after the
// point, no exponent.
func number(v float64) string {
	s := strconv.FormatFloat(v, 'f', 4, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

func predictedMs(p *float64, none string) string {
	if p == nil {
		return none
	}
	return number(*p) + " ms"
}

func sloOf(c scenario.Class) scenario.SLO {
	if c.SLO == nil {
		return scenario.SLO{}
	}
	return *c.SLO
}

func hasClass(cs []classPair, name string) bool {
	for _, c := range cs {
		if c.plan.Name == name {
			return true
		}
	}
	return false
}
