package simulate

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

func newKey(q scenario.Quota, refill string) *key {
	if q.BurstWindowS == 0 {
		q.BurstWindowS = 1
	}
	if q.ActiveHours == 0 {
		q.ActiveHours = 24
	}
	k := &key{q: quota.Key{Quota: q}}
	for d := range scenario.NumDimensions {
		if k.q.Limit(d) > 0 {
			k.limits = append(k.limits, newLimit(d, k.q, refill, 4))
		}
	}
	return k
}

// one is a single request's charge: n tokens on every token dimension.
func one(tokens float64) charge { return charge{1, tokens, tokens, 0, 1, tokens} }

type attempt struct {
	t       float64
	tokens  float64
	ok      bool
	waitFor float64 // the Retry-After when refused
}

func admitAll(t *testing.T, k *key, steps []attempt) {
	t.Helper()
	for i, s := range steps {
		ok, wait := k.admit(s.t, one(s.tokens), 0)
		if ok != s.ok || math.Abs(wait-s.waitFor) > 1e-9 {
			t.Errorf("attempt %d at %g s: admitted %v, Retry-After %g s; want %v, %g s", i, s.t, ok, wait, s.ok, s.waitFor)
		}
	}
}

// TestContinuousBucket: rpm 600 in 1 s windows holds 10 requests and gains
// one every 0.1 s; a refused request waits until the bucket holds one.
func TestContinuousBucket(t *testing.T) {
	k := newKey(scenario.Quota{RPM: 600}, RefillContinuous)
	steps := make([]attempt, 0, 14)
	for range 10 {
		steps = append(steps, attempt{t: 0, ok: true})
	}
	steps = append(steps,
		attempt{t: 0, ok: false, waitFor: 0.1},
		attempt{t: 0.05, ok: false, waitFor: 0.05},
		attempt{t: 0.1, ok: true},
		attempt{t: 0.1, ok: false, waitFor: 0.1},
		attempt{t: 10, ok: true}, // refilled to 10, not beyond
	)
	admitAll(t, k, steps)
	if k.limited != 3 || k.limits[0].bucket.Level != 9 {
		t.Errorf("%d 429s, level %g; want 3 and 9", k.limited, k.limits[0].bucket.Level)
	}
}

// TestOversizeRequestLeavesDebt: a request larger than the allowance is
// admitted by a full bucket and leaves it in debt.
func TestOversizeRequestLeavesDebt(t *testing.T) {
	k := newKey(scenario.Quota{TPM: 600}, RefillContinuous) // 10 tokens/s, 10 per window
	admitAll(t, k, []attempt{
		{t: 0, tokens: 25, ok: true},               // level −15
		{t: 1, tokens: 1, ok: false, waitFor: 0.6}, // level −5: 6 tokens short at 10/s
		{t: 1.6, tokens: 1, ok: true},
	})
}

// TestWindowCounter: in window mode rpm 600 allows 10 per second counted
// from each multiple of 1 s; a refused request waits for the next window.
func TestWindowCounter(t *testing.T) {
	k := newKey(scenario.Quota{RPM: 600}, RefillWindow)
	steps := make([]attempt, 0, 13)
	for range 10 {
		steps = append(steps, attempt{t: 0.5, ok: true})
	}
	steps = append(steps,
		attempt{t: 0.75, ok: false, waitFor: 0.25},
		attempt{t: 1, ok: true},
		attempt{t: 1.999, ok: true},
	)
	admitAll(t, k, steps)
}

// TestDailyLimitResetsEachDay: rpd 3 allows three requests a day whatever
// the refill mode; the fourth waits for the next day.
func TestDailyLimitResetsEachDay(t *testing.T) {
	k := newKey(scenario.Quota{RPD: 3}, RefillContinuous)
	admitAll(t, k, []attempt{
		{t: 0, ok: true}, {t: 100, ok: true}, {t: 3600, ok: true},
		{t: 43200, ok: false, waitFor: 43200},
		{t: 86400, ok: true},
	})
}

// TestAllOrNothing: a request refused on one limit counts on none.
func TestAllOrNothing(t *testing.T) {
	k := newKey(scenario.Quota{RPM: 6000, TPM: 600}, RefillContinuous)
	admitAll(t, k, []attempt{{t: 0, tokens: 10, ok: true}, {t: 0, tokens: 5, ok: false, waitFor: 0.5}})
	if rpm := k.limits[0]; rpm.bucket.Level != 99 || rpm.limited != 0 || k.limits[1].limited != 1 {
		t.Errorf("rpm level %g with %d 429s, tpm %d 429s; want 99, 0 and 1", rpm.bucket.Level, rpm.limited, k.limits[1].limited)
	}
}

// TestRefundOfUnusedMaxTokens: a bucket gets back what a request reserved
// and did not use; a window only what it counted itself.
func TestRefundOfUnusedMaxTokens(t *testing.T) {
	c := charge{1, 70, 20, 50, 1, 70}        // 20 in, max_tokens 50
	refund := charge{0, -40, 0, -40, 0, -40} // 10 produced: the refund of 40
	t.Run("bucket", func(t *testing.T) {
		k := newKey(scenario.Quota{TPM: 6000}, RefillContinuous) // 100/s, 100 per window
		k.admit(0, c, 0)
		k.settle(0.1, 0, &refund, 0, 1)
		if l := k.limits[0]; math.Abs(l.bucket.Level-80) > 1e-9 || l.use[0] != 30 {
			t.Errorf("level %g, use %g; want 100 − 70 + 10 + 40 = 80 and 30 used", l.bucket.Level, l.use[0])
		}
	})
	t.Run("window", func(t *testing.T) {
		k := newKey(scenario.Quota{TPM: 6000}, RefillWindow)
		k.admit(0.2, c, 0)
		k.settle(0.9, 0.2, &refund, 0, 0)
		if l := k.limits[0]; l.used != 30 {
			t.Errorf("same window: used %g, want 30", l.used)
		}
		k.admit(1.2, c, 1)
		k.settle(2.5, 1.2, &refund, 1, 2)
		if l := k.limits[0]; l.used != 0 || l.use[1] != 30 {
			t.Errorf("a later window: used %g, use %g; want 0 (nothing to refund) and 30", l.used, l.use[1])
		}
	})
	t.Run("actual accounting counts output at completion", func(t *testing.T) {
		k := newKey(scenario.Quota{TPM: 6000}, RefillContinuous)
		k.admit(0, charge{1, 20, 20, 0, 1, 20}, 0)
		k.settle(0, 0, &charge{0, 10, 0, 10, 0, 10}, 0, 2)
		if l := k.limits[0]; l.bucket.Level != 70 || l.use[0] != 20 || l.use[2] != 10 {
			t.Errorf("level %g, use %v; want 70 with 20 at admission and 10 at completion", l.bucket.Level, l.use)
		}
	})
}

// TestLimitUseEnumIsTheDimensionTable: the schema's enum of a limit's
// dimension, a struct tag, lists the quota dimensions in their order.
func TestLimitUseEnumIsTheDimensionTable(t *testing.T) {
	f, _ := reflect.TypeFor[LimitUse]().FieldByName("Dimension")
	if got, want := f.Tag.Get("enum"), strings.Join(scenario.DimensionNames(), ","); got != want {
		t.Errorf("enum %q, want %q", got, want)
	}
}
