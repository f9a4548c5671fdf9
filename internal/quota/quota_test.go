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
		d    Dimension
		want float64
	}{
		{RPM, 0.9 * 5000 / 60},            // 75 req/s
		{TPM, 0.9 * 2_000_000 / 60},       // 30,000 tokens/s
		{RPD, 0.9 * 100_000 / (8 * 3600)}, // 3.125 req/s
		{ITPM, math.Inf(1)},
	}
	for _, tt := range tests {
		if got := k.Capacity(tt.d); math.Abs(got-tt.want) > 1e-9 && got != tt.want {
			t.Errorf("%v capacity = %g, want %g", tt.d, got, tt.want)
		}
	}
	if got := k.LimitFor(TPM, 30000); math.Abs(got-2_000_000) > 1e-6 {
		t.Errorf("LimitFor(tpm, 30000/s) = %g, want 2,000,000", got)
	}
}

func TestUseByAccounting(t *testing.T) {
	r := Request{MeanIn: 1000, MeanOut: 250, MaxTokens: 800, CachedFraction: 0.5}
	actual := key(scenario.Quota{Name: "a", TPM: 1}).Use(r)
	if actual[RPM] != 1 || actual[TPM] != 1250 || actual[ITPM] != 1000 || actual[OTPM] != 250 || actual[TPD] != 1250 {
		t.Errorf("actual accounting use = %v", actual)
	}
	admitted := key(scenario.Quota{Name: "m", TPM: 1, TokenAccounting: "max_tokens", CachedInputFree: true}).Use(r)
	if admitted[TPM] != 1800 || admitted[OTPM] != 800 || admitted[ITPM] != 500 {
		t.Errorf("max_tokens accounting with free cache reads = %v, want tpm 1800, otpm 800, itpm 500", admitted)
	}
}

func need(v float64) *Vector {
	var n Vector
	for d := range n {
		n[d] = v
	}
	return &n
}

func TestAllocatePriority(t *testing.T) {
	k := key(scenario.Quota{Name: "k", RPM: 600}) // 9 req/s usable
	claims := []Claim{
		{Class: "batch", Mode: "batch", Weight: 1},
		{Class: "chat", Mode: "interactive", Weight: 1, Need: need(4)},
		{Class: "jobs", Mode: "semi", Weight: 1, Need: need(3)},
		{Class: "bulk", Mode: "batch", Weight: 3},
	}
	got := Allocate(k, claims, scenario.AllocationPriority)
	want := []float64{0.5, 4, 3, 1.5} // 2 left, split 1:3 among the classes without demand
	for i, w := range want {
		if math.Abs(got[i][RPM]-w) > 1e-12 {
			t.Errorf("%s gets %g req/s, want %g", claims[i].Class, got[i][RPM], w)
		}
	}
	if !math.IsInf(got[0][TPM], 1) {
		t.Errorf("an unlimited dimension should allot +Inf, got %g", got[0][TPM])
	}
	// Not enough for the semi class after the interactive one.
	claims[2].Need = need(6)
	got = Allocate(k, claims, scenario.AllocationPriority)
	if got[1][RPM] != 4 || got[2][RPM] != 5 || got[0][RPM] != 0 {
		t.Errorf("over-subscribed: chat %g jobs %g batch %g, want 4, 5, 0", got[1][RPM], got[2][RPM], got[0][RPM])
	}
}

func TestAllocateAllWithDemandShareTheRest(t *testing.T) {
	k := key(scenario.Quota{Name: "k", RPM: 600})
	claims := []Claim{{Class: "a", Mode: "interactive", Weight: 1, Need: need(1)}, {Class: "b", Mode: "batch", Weight: 2, Need: need(2)}}
	got := Allocate(k, claims, scenario.AllocationPriority)
	if math.Abs(got[0][RPM]-3) > 1e-12 || math.Abs(got[1][RPM]-6) > 1e-12 {
		t.Errorf("got %g and %g, want 1+2 and 2+4", got[0][RPM], got[1][RPM])
	}
	alone := Allocate(k, claims[:1], scenario.AllocationPriority)
	if math.Abs(alone[0][RPM]-9) > 1e-12 {
		t.Errorf("a class alone on a key gets %g, want the whole 9", alone[0][RPM])
	}
}

func TestAllocateWeightedWaterFilling(t *testing.T) {
	k := key(scenario.Quota{Name: "k", RPM: 600}) // 9 req/s
	claims := []Claim{
		{Class: "small", Weight: 1, Need: need(1)},
		{Class: "x", Weight: 1},
		{Class: "y", Weight: 2},
	}
	got := Allocate(k, claims, scenario.AllocationWeighted)
	// Fair shares 3, 3, 6 → small keeps 1; 8 left split 1:2.
	want := []float64{1, 8.0 / 3, 16.0 / 3}
	for i, w := range want {
		if math.Abs(got[i][RPM]-w) > 1e-12 {
			t.Errorf("%s gets %g, want %g", claims[i].Class, got[i][RPM], w)
		}
	}
}

// TestCapacityForIsEnough checks the inverse used by remedies: at the
// capacity it returns, Allocate gives the claim at least its need.
func TestCapacityForIsEnough(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	modes := []string{"interactive", "semi", "batch"}
	for trial := range 500 {
		n := 1 + r.IntN(4)
		claims := make([]Claim, n)
		for i := range claims {
			claims[i] = Claim{Class: string(rune('a' + i)), Mode: modes[r.IntN(3)], Priority: r.IntN(3), Weight: 0.5 + r.Float64()*2}
			if r.IntN(3) > 0 {
				claims[i].Need = need(r.Float64() * 10)
			}
		}
		for _, policy := range []string{"priority", "weighted"} {
			c := r.IntN(n)
			want := 0.1 + r.Float64()*10
			if claims[c].Need != nil {
				claims[c].Need = need(want)
			}
			capacity := CapacityFor(claims, c, RPM, want, policy)
			k := key(scenario.Quota{Name: "k", RPM: capacity * 60 / 0.9})
			got := Allocate(k, claims, policy)[c][RPM]
			if got < want*(1-1e-9) {
				t.Fatalf("trial %d %s: capacity %g gives claim %d only %g, need %g (%+v)", trial, policy, capacity, c, got, want, claims)
			}
		}
	}
}
