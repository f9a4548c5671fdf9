package plan

import (
	"context"
	"fmt"
	"strings"

	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// prefillPerToken is the prefill slope that a class's request pays per
// input token, seconds: the latency's prefill_ms_per_1k_tokens on the
// uncached input only, since a token read from the prompt cache skips
// prefill (docs/concepts.md, "The prompt cache"). With k the slope and
// r = cached_input_fraction,
//
//	TTFT = base + k·(1 − r)·in/1000
//
// so that the cache lowers the mean TTFT by exactly k·r·E[in]/1000.
func prefillPerToken(l scenario.Latency, c scenario.Class) float64 {
	return l.PrefillMsPer1K / 1000 / 1000 * (1 - c.CachedInputFraction)
}

// promptCache is the prompt cache's effect on class i at its pool (nil
// when it reads nothing from the cache): its predicted TTFT p95 beside
// the one a model of the same class with no input cached gives at the
// same pool, load and pacing wait, and its use of the key per request and
// at its run rate, with and without the cached share. An accumulating
// agent task with a prefix cache is compared with the same task with
// neither cached_input_fraction nor latency.cache.
func (r *run) promptCache(ctx context.Context, i, pool int, pr Predicted) (*PromptCache, error) {
	m := r.models[i]
	f := m.cachedFraction()
	if f == 0 {
		return nil, nil
	}
	spec := m.spec
	spec.CachedInputFraction = 0
	if l := spec.Latency; l != nil && l.Cache != nil {
		cold := *l
		cold.Cache = nil
		spec.Latency = &cold
	}
	cold, err := newClassModel(m.eng, spec, m.key, r.s.Policy, m.draws)
	if err != nil {
		// Without the cache the class cannot be planned (its requests
		// would take more than the planner accepts): there is nothing to
		// compare the cache with, and the plan with it stands.
		return nil, errNoColdModel{err}
	}
	if m.pace.waits() && !m.pace.unstable {
		m.paceSample()
	}
	cold.pace, cold.paceD, cold.paceD1 = m.pace, m.paceD, m.paceD1
	pc := &PromptCache{CachedInputFraction: signed.Round(f, 4), TTFTP95Ms: pr.TTFTP95Ms,
		UsePerRequest: map[string]float64{}, UsePerRequestNoCache: map[string]float64{},
		Utilization: pr.Utilization, UtilizationNoCache: map[string]float64{}}
	if pool >= 1 && pr.TTFTP95Ms != nil {
		v, err := cold.percentileAt(ctx, pool, r.load(i), pctTTFT, 0.95)
		if err != nil {
			return nil, err
		}
		pc.TTFTP95MsWithoutCache = msPtr(v)
	}
	run := r.runRate(i, pool)
	for d := range scenario.NumDimensions {
		if l := m.key.Limit(d); l > 0 {
			// m.use of a daily limit counts the hours of the day the class
			// runs and its busiest day (dayShare); cold's is per request.
			scale := 1.0
			if d.Daily() {
				scale = r.dayShare(i)
			}
			pc.UsePerRequest[d.String()] = signed.Round(m.use[d]/scale, 4)
			pc.UsePerRequestNoCache[d.String()] = signed.Round(cold.use[d], 4)
			pc.UtilizationNoCache[d.String()] = signed.Round(run*cold.use[d]*scale*m.key.Seconds(d)/l, 4)
		}
	}
	return pc, nil
}

// cacheSentence says what the prompt cache does for a class, for its
// explanation: its TTFT p95 without and with the cache, where the cache
// changes it (nothing of it for a class without a pool, which has no TTFT
// p95), and the limits whose use per request (per task for an agent task
// class, unit "task") it lowers.
func cacheSentence(pc *PromptCache, unit string) string {
	if pc == nil {
		return ""
	}
	var parts []string
	if pc.TTFTP95Ms != nil && pc.TTFTP95MsWithoutCache != nil && *pc.TTFTP95Ms != *pc.TTFTP95MsWithoutCache {
		parts = append(parts, fmt.Sprintf("its TTFT p95 from %s to %s ms", num(*pc.TTFTP95MsWithoutCache), num(*pc.TTFTP95Ms)))
	}
	for d := range scenario.NumDimensions {
		name := d.String()
		if cold, ok := pc.UsePerRequestNoCache[name]; ok && pc.UsePerRequest[name] < cold {
			parts = append(parts, fmt.Sprintf("its %s per %s from %s to %s", name, unit, num(cold), num(pc.UsePerRequest[name])))
		}
	}
	if len(parts) == 0 && (pc.TTFTP95Ms == nil || pc.TTFTP95MsWithoutCache == nil) {
		// Without a pool there is no TTFT p95 to compare: the cache's
		// effect on it is not known, not nil.
		return fmt.Sprintf("Its prompt cache (%s %% of the input) does not change its use of the key.", num(pc.CachedInputFraction*100))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("Its prompt cache (%s %% of the input) changes neither its TTFT nor its use of the key.", num(pc.CachedInputFraction*100))
	}
	return fmt.Sprintf("Its prompt cache (%s %% of the input) lowers %s.", num(pc.CachedInputFraction*100), strings.Join(parts, " and "))
}

// errNoColdModel is why a class's prompt cache has no comparison: the
// class without its cache, which the planner refuses.
type errNoColdModel struct{ err error }

func (e errNoColdModel) Error() string {
	return "without its prompt cache " + e.err.Error()
}
