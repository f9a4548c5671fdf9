package analysis

import (
	"fmt"
	"math"
)

// trendZ is the one-sided critical value of the 429 trend test
// (p < 0.001): a 429 rate that rises with concurrency by chance alone
// passes it once in a thousand ramps.
const trendZ = 3.09

// rateTrend tests whether the share of 429 answers rises with
// concurrency, by the Cochran–Armitage test for trend in proportions
// (Armitage, Biometrics 11(3), 1955), with log2 of the concurrency as the
// score of each step:
//
//	Z = Σ xᵢ(sᵢ − s̄) / √(p(1 − p) · Σ nᵢ(sᵢ − s̄)²),  s̄ = Σ nᵢsᵢ / N,  p = Σ xᵢ / N
//
// nᵢ the answers of step i, xᵢ its 429s. It returns Z, and false when the
// steps cannot show a trend (fewer than two concurrencies, no 429 or only
// 429s).
func rateTrend(steps []Step) (float64, bool) {
	var n, x, sn float64
	distinct := map[int]bool{}
	for _, s := range steps {
		if s.Answers == 0 {
			continue
		}
		distinct[s.Concurrency] = true
		n += float64(s.Answers)
		x += float64(s.RateLimited)
		sn += float64(s.Answers) * score(s.Concurrency)
	}
	if len(distinct) < 2 || x == 0 || x >= n {
		return 0, false
	}
	p, mean := x/n, sn/n
	var num, den float64
	for _, s := range steps {
		if s.Answers == 0 {
			continue
		}
		d := score(s.Concurrency) - mean
		num += float64(s.RateLimited) * d
		den += float64(s.Answers) * d * d
	}
	if den <= 0 {
		return 0, false
	}
	return num / math.Sqrt(p*(1-p)*den), true
}

func score(c int) float64 { return math.Log2(math.Max(1, float64(c))) }

// judgeQuota sets quota_limited: the 429 rate rises with concurrency over
// the steps up to the first that failed the knee rule (those that show
// where the ramp stopped scaling). 429s at a rate that does not rise get
// a note instead: they come from elsewhere (other traffic on the key, a
// gateway's random throttling), not from this load.
func judgeQuota(res *Result, judged []Step, failed int) {
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
	if ok && z > trendZ {
		res.QuotaLimited = true
		res.Notes = append(res.Notes, fmt.Sprintf("the share of 429 answers rises with concurrency (trend test z = %.1f): the quota binds, not the model", z))
		return
	}
	trend := "it does not rise with concurrency"
	if ok {
		trend = fmt.Sprintf("it does not rise with concurrency beyond chance (trend test z = %.1f, under %.2f)", z, trendZ)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("warning: %d of %d answers were 429, but %s: they do not show this load meeting the quota (other traffic on the key, or a gateway's throttling), so the knee is taken as the model's, not the quota's", limited, answers, trend))
}
