package analysis

import (
	"fmt"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/model"
)

// rateTrend tests whether the share of 429 answers rises with
// concurrency (model.TrendZ over the steps, nᵢ the answers of step i, xᵢ
// its 429s, log2 of its concurrency the score).
func rateTrend(steps []measure.Step) (float64, bool) {
	gs := make([]model.Group, 0, len(steps))
	for _, s := range steps {
		gs = append(gs, model.Group{Score: model.ConcurrencyScore(float64(s.Concurrency)), Trials: float64(s.Answers), Events: float64(s.RateLimited)})
	}
	return model.TrendZ(gs)
}

// judgeQuota sets quota_limited: the 429 rate rises with concurrency over
// the steps up to the first that failed the knee rule (those that show
// where the ramp stopped scaling). 429s at a rate that does not rise get
// a note instead: they come from elsewhere (other traffic on the key, a
// gateway's random throttling), not from this load.
func judgeQuota(res *measure.Result, judged []measure.Step, failed int) {
	upTo := judged
	if failed >= 0 {
		upTo = judged[:failed+1]
	}
	var limited, answers int
	for _, s := range upTo {
		limited += s.RateLimited
		answers += s.Answers
	}
	if limited == 0 {
		return
	}
	z, ok := rateTrend(upTo)
	if ok && z > model.TrendCritical {
		res.QuotaLimited = true
		res.Notes = append(res.Notes, fmt.Sprintf("the share of 429 answers rises with concurrency (trend test z = %.1f): the quota binds, not the model", z))
		return
	}
	trend := "it does not rise with concurrency"
	if ok {
		trend = fmt.Sprintf("it does not rise with concurrency beyond chance (trend test z = %.1f, under %.2f)", z, model.TrendCritical)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("warning: %d of %d answers were 429, but %s: they do not show this load meeting the quota (other traffic on the key, or a gateway's throttling), so the knee is taken as the model's, not the quota's", limited, answers, trend))
}
