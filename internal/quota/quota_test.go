package quota

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

func key(q scenario.Quota) Key {
	s := scenario.Scenario{Quotas: []scenario.Quota{q}}.WithDefaults()
	return Key{s.Quotas[0]}
}

func TestCapacityHandWorked(t *testing.T) {
	k := key(scenario.Quota{Name: "k", RPM: 5000, TPM: 2_000_000, RPD: 100_000, ActiveHours: 8})
	tests := []struct {
		d    scenario.Dimension
		want float64
	}{
		{scenario.RPM, 0.9 * 5000 / 60},            // 75 req/s
		{scenario.TPM, 0.9 * 2_000_000 / 60},       // 30,000 tokens/s
		{scenario.RPD, 0.9 * 100_000 / (8 * 3600)}, // 3.125 req/s
		{scenario.ITPM, math.Inf(1)},
	}
	for _, tt := range tests {
		if got := k.Capacity(tt.d); math.Abs(got-tt.want) > 1e-9 && got != tt.want {
			t.Errorf("%v capacity = %g, want %g", tt.d, got, tt.want)
		}
	}
	if got := k.LimitFor(scenario.TPM, 30000); math.Abs(got-2_000_000) > 1e-6 {
		t.Errorf("LimitFor(tpm, 30000/s) = %g, want 2,000,000", got)
	}
}

func TestUseByAccounting(t *testing.T) {
	r := Request{MeanIn: 1000, MeanOut: 250, MaxTokens: 800, CachedFraction: 0.5}
	actual := key(scenario.Quota{Name: "a", TPM: 1}).Use(r)
	if actual[scenario.RPM] != 1 || actual[scenario.TPM] != 1250 || actual[scenario.ITPM] != 1000 || actual[scenario.OTPM] != 250 || actual[scenario.TPD] != 1250 {
		t.Errorf("actual accounting use = %v", actual)
	}
	admitted := key(scenario.Quota{Name: "m", TPM: 1, TokenAccounting: "max_tokens", CachedInputFree: true}).Use(r)
	if admitted[scenario.TPM] != 1800 || admitted[scenario.OTPM] != 800 || admitted[scenario.ITPM] != 500 {
		t.Errorf("max_tokens accounting with free cache reads = %v, want tpm 1800, otpm 800, itpm 500", admitted)
	}
	// Cache reads free for tpm and tpd as well: 1000 × 0.5 + 250.
	k := key(scenario.Quota{Name: "t", TPM: 1, CachedInputFree: true, CachedInputTPMFree: true})
	free := k.Use(r)
	if free[scenario.TPM] != 750 || free[scenario.TPD] != 750 || free[scenario.ITPM] != 500 || free[scenario.OTPM] != 250 {
		t.Errorf("cache reads free for tpm = %v, want tpm and tpd 750, itpm 500, otpm 250", free)
	}
	// What a send counts agrees: 1000 input of which half cached, and
	// the output at completion.
	if a := k.Admission(1000, 0, 0.5); a[scenario.TPM] != 500 || a[scenario.ITPM] != 500 || a[scenario.RPM] != 1 {
		t.Errorf("admission with cache reads free for tpm = %v, want tpm 500, itpm 500", a)
	}
	tpmOnly := key(scenario.Quota{Name: "o", TPM: 1, CachedInputTPMFree: true}).Use(r)
	if tpmOnly[scenario.TPM] != 750 || tpmOnly[scenario.ITPM] != 1000 {
		t.Errorf("cache reads free for tpm only = %v, want tpm 750, itpm 1000", tpmOnly)
	}
}

func withNeed(c Claim, n float64) Claim {
	c.Need, c.HasNeed = n, true
	return c
}

// open fills in the fields every claim has: weight 1 when unset, no cap.
func open(cs ...Claim) []Claim {
	for i := range cs {
		if cs[i].Weight == 0 {
			cs[i].Weight = 1
		}
		if cs[i].Cap == 0 {
			cs[i].Cap = math.Inf(1)
		}
	}
	return cs
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func TestDividePriority(t *testing.T) {
	claims := open(
		Claim{Class: "batch", Mode: "batch"},
		withNeed(Claim{Class: "chat", Mode: "interactive"}, 4),
		withNeed(Claim{Class: "jobs", Mode: "semi"}, 3),
		Claim{Class: "bulk", Mode: "batch", Weight: 3},
	)
	got, reserved := Divide(9, claims, scenario.AllocationPriority)
	want := []float64{0.5, 4, 3, 1.5} // 2 left, split 1:3 among the classes without demand
	for i, w := range want {
		if !near(got[i], w) {
			t.Errorf("%s gets %g, want %g", claims[i].Class, got[i], w)
		}
	}
	if reserved[1] != 4 || reserved[2] != 3 || reserved[0] != 0 {
		t.Errorf("reserved %v, want the needs of chat and jobs", reserved)
	}
	// Not enough for the semi class after the interactive one.
	claims[2].Need = 6
	got, _ = Divide(9, claims, scenario.AllocationPriority)
	if got[1] != 4 || got[2] != 5 || got[0] != 0 {
		t.Errorf("over-subscribed: chat %g jobs %g batch %g, want 4, 5, 0", got[1], got[2], got[0])
	}
}

func TestDivideAllWithDemandShareTheRest(t *testing.T) {
	claims := open(withNeed(Claim{Class: "a", Mode: "interactive"}, 1), withNeed(Claim{Class: "b", Mode: "batch", Weight: 2}, 2))
	got, _ := Divide(9, claims, scenario.AllocationPriority)
	if !near(got[0], 3) || !near(got[1], 6) {
		t.Errorf("got %g and %g, want 1+2 and 2+4", got[0], got[1])
	}
	alone, _ := Divide(9, claims[:1], scenario.AllocationPriority)
	if !near(alone[0], 9) {
		t.Errorf("a class alone on a key gets %g, want the whole 9", alone[0])
	}
}

func TestDivideWeightedWaterFilling(t *testing.T) {
	claims := open(withNeed(Claim{Class: "small"}, 1), Claim{Class: "x"}, Claim{Class: "y", Weight: 2})
	got, _ := Divide(9, claims, scenario.AllocationWeighted)
	// Fair shares 3, 3, 6 → small keeps 1; 8 left split 1:2.
	want := []float64{1, 8.0 / 3, 16.0 / 3}
	for i, w := range want {
		if !near(got[i], w) {
			t.Errorf("%s gets %g, want %g", claims[i].Class, got[i], w)
		}
	}
}

// TestDivideCapsFlowToOthers: a claim that cannot use its share (its other
// ceilings hold it) keeps only its cap, and the rest goes to the claims
// that can still grow, under both policies.
func TestDivideCapsFlowToOthers(t *testing.T) {
	for _, policy := range []string{scenario.AllocationPriority, scenario.AllocationWeighted} {
		// 16 slots: chat reserves 4 but can grow; reports, capped at 5, cannot use its share.
		claims := open(withNeed(Claim{Class: "chat", Mode: "interactive"}, 4), Claim{Class: "reports", Mode: "semi", Cap: 5})
		got, _ := Divide(16, claims, policy)
		if !near(got[1], 5) || !near(got[0], 11) {
			t.Errorf("%s: chat %g reports %g, want 11 and 5", policy, got[0], got[1])
		}
		// Everyone capped: what nobody can use is split by weight, so that
		// the whole capacity is allotted.
		claims[0].Cap = 6
		got, _ = Divide(16, claims, policy)
		if !near(got[0], 8.5) || !near(got[1], 7.5) {
			t.Errorf("%s: chat %g reports %g, want 6 + 2.5 and 5 + 2.5", policy, got[0], got[1])
		}
	}
}

// TestCapacityForIsEnough checks the inverse used by remedies: at the
// capacity it returns, Divide gives the claim at least its need, and a
// little less capacity does not.
func TestCapacityForIsEnough(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	modes := []string{"interactive", "semi", "batch"}
	for trial := range 500 {
		n := 1 + r.IntN(4)
		claims := make([]Claim, n)
		for i := range claims {
			claims[i] = Claim{Class: string(rune('a' + i)), Mode: modes[r.IntN(3)], Priority: r.IntN(3), Weight: 0.5 + r.Float64()*2, Cap: math.Inf(1)}
			if r.IntN(3) > 0 {
				claims[i] = withNeed(claims[i], r.Float64()*10)
			}
			if r.IntN(4) == 0 {
				claims[i].Cap = r.Float64() * 10
			}
		}
		for _, policy := range []string{"priority", "weighted"} {
			c := r.IntN(n)
			claims[c].Cap = math.Inf(1)
			want := 0.1 + r.Float64()*10
			if claims[c].HasNeed {
				claims[c].Need = want
			}
			capacity := CapacityFor(claims, c, want, policy)
			got, _ := Divide(capacity, claims, policy)
			if got[c] < want*(1-1e-9) {
				t.Fatalf("trial %d %s: capacity %g gives claim %d only %g, need %g (%+v)", trial, policy, capacity, c, got[c], want, claims)
			}
			less, _ := Divide(capacity*(1-1e-6), claims, policy)
			if less[c] >= want {
				t.Fatalf("trial %d %s: capacity %g is not the smallest: %g also gives %g", trial, policy, capacity, capacity*(1-1e-6), less[c])
			}
		}
	}
}

// TestChargesAreAdmissionAndCompletion: a class's charges worked out once
// give what the request's own rule does, every accounting and cache
// setting, on every dimension, to the bit.
func TestChargesAreAdmissionAndCompletion(t *testing.T) {
	for _, q := range []scenario.Quota{
		{Name: "a", RPM: 1, TPM: 1},
		{Name: "m", TPM: 1, TokenAccounting: scenario.AccountingMaxTokens},
		{Name: "c", ITPM: 1, CachedInputFree: true},
		{Name: "t", TPM: 1, TokenAccounting: scenario.AccountingMaxTokens, CachedInputFree: true, CachedInputTPMFree: true},
	} {
		k := key(q)
		for _, mt := range []float64{0, 600} {
			for _, cf := range []float64{0, 0.3, 1} {
				c := k.Charges(mt, cf)
				for _, in := range []float64{0, 1, 801.7, 12345.678} {
					a := c.Admission(in)
					counted := in
					if q.CachedInputFree {
						counted *= 1 - cf
					}
					tokensIn := in
					if q.CachedInputTPMFree {
						tokensIn *= 1 - cf
					}
					out := 0.0
					if q.TokenAccounting == scenario.AccountingMaxTokens && mt > 0 {
						out = mt
					}
					want := Vector{1, tokensIn + out, counted, out, 1, tokensIn + out}
					if a != want || k.Admission(in, mt, cf) != want {
						t.Errorf("%s, max_tokens %g, cached %g, in %g: admission %v, want %v", q.Name, mt, cf, in, a, want)
					}
				}
				for _, o := range []float64{1, 150.25, 600} {
					n := o
					if q.TokenAccounting == scenario.AccountingMaxTokens && mt > 0 {
						n = -(mt - o)
					}
					want := Vector{0, n, 0, n, 0, n}
					if got := c.Completion(o); got != want || k.Completion(o, mt) != want {
						t.Errorf("%s, max_tokens %g: completion of %g %v, want %v", q.Name, mt, o, got, want)
					}
				}
			}
		}
	}
}
