package quota

import (
	"math"
	"testing"
)

// TestBucketWaitThenFits: after waiting the time Wait names, the need
// fits, and not much before; a full bucket refills no further.
func TestBucketWaitThenFits(t *testing.T) {
	for _, tc := range []struct {
		size, rate, level, need float64
	}{
		{60, 1, 0, 1}, {7, 7.0 / 60, 0.3, 1}, {1000, 1000.0 / 60, -250, 408}, {1500, 25, 17.5, 400},
	} {
		b := NewBucket(tc.size, tc.rate, 1e-9, false)
		b.Level = tc.level
		w := b.Wait(tc.need)
		if w <= 0 || b.Fits(tc.need) {
			t.Fatalf("%+v: wait %g", tc, w)
		}
		early := b
		early.Refill(w * 0.99)
		b.Refill(w)
		if !b.Fits(tc.need) || b.Wait(tc.need) != 0 || early.Fits(tc.need) {
			t.Errorf("%+v: after %g s the bucket holds %g (%g at 99 %%) for %g", tc, w, b.Level, early.Level, tc.need)
		}
		b.Refill(1e9)
		if b.Level != tc.size || b.Fill() != 0 {
			t.Errorf("%+v: a long refill leaves %g, fill %g", tc, b.Level, b.Fill())
		}
	}
}

// TestBucketDebtRefundAndOversize: units counted after admission put the
// bucket in debt; a refund never lifts it past full; only with Oversize
// does a full bucket take a need larger than its size.
func TestBucketDebtRefundAndOversize(t *testing.T) {
	b := NewBucket(100, 10, 1e-9, false)
	b.Take(70)
	b.Take(60) // charged after admission
	if b.Level != -30 || b.Fill() != 1.3 || b.Wait(10) != 4 {
		t.Errorf("level %g, fill %g, wait %g; want −30, 1.3 and 4 s", b.Level, b.Fill(), b.Wait(10))
	}
	b.Take(-500)
	if b.Level != 100 {
		t.Errorf("a refund lifted the level to %g", b.Level)
	}
	if b.Fits(150) || b.Wait(150) != 5 {
		t.Errorf("without Oversize a need of 150 in a bucket of 100: fits %v, wait %g", b.Fits(150), b.Wait(150))
	}
	o := NewBucket(100, 10, 1e-9, true)
	if !o.Fits(150) {
		t.Error("a full bucket with Oversize refused a need larger than its size")
	}
	o.Take(150)
	if o.Fits(150) || o.Wait(150) != 15 {
		t.Errorf("in debt: fits %v, wait %g; want a wait of (100 − (−50)) / 10 = 15 s", o.Fits(150), o.Wait(150))
	}
	exact := NewBucket(100, 10, 1e-9, false)
	if w := exact.Wait(100 + 1e-12); w != 0 || math.IsNaN(w) {
		t.Errorf("the slack does not absorb rounding: wait %g", w)
	}
}

// TestOversizeFitsAFullBucketWithinSlack: a bucket refilled to within
// rounding of full takes a need larger than its size, so that a request
// that waits for a full bucket does not wait for ever one rounding error
// short of it.
func TestOversizeFitsAFullBucketWithinSlack(t *testing.T) {
	b := NewBucket(6750, 6750, 1e-9*6750, true)
	b.Level = 6749.999999999994
	if !b.Fits(7000) || b.Wait(7000) != 0 {
		t.Fatalf("a bucket %g short of full refuses an oversized need (wait %g s)", b.Size-b.Level, b.Wait(7000))
	}
	b.Level = 6000
	if b.Fits(7000) || b.Wait(7000) <= 0 {
		t.Fatal("a bucket far from full takes an oversized need")
	}
}
