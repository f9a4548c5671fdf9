package simulate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pushed is an event in the order it was pushed, for checking the order
// the queue gives events back in.
type pushed struct {
	t float64
	n int
}

// drain pops every event, which must come in time order and, at the same
// time, in the order they were pushed (each carries its push number as its
// ref).
func drain(t *testing.T, q *events) []pushed {
	t.Helper()
	var out []pushed
	for q.len() > 0 {
		at, _ := q.popBy(math.Inf(1))
		out = append(out, pushed{at.t, int(at.ref)})
	}
	for i := 1; i < len(out); i++ {
		a, b := out[i-1], out[i]
		if b.t < a.t || (b.t == a.t && b.n < a.n) {
			t.Fatalf("event %d (t %g, pushed %d) came after event %d (t %g, pushed %d)", i, b.t, b.n, i-1, a.t, a.n)
		}
	}
	return out
}

// TestEventOrder: events come out by time and, at the same time, in the
// order they were scheduled, arrivals and other events alike, as pushes
// and pops interleave.
func TestEventOrder(t *testing.T) {
	var q events
	rng := rand.New(rand.NewPCG(1, 2))
	n, popped := 0, 0
	last := math.Inf(-1)
	for range 20000 {
		if q.len() > 0 && rng.IntN(3) == 0 {
			at, _ := q.popBy(math.Inf(1))
			if at.t < last {
				t.Fatalf("popped t %g after %g", at.t, last)
			}
			last = at.t
			popped++
			continue
		}
		n++
		k := kind(rng.IntN(int(evTool) + 1)) // any kind, arrivals more often
		if rng.IntN(4) == 0 {
			k = evArrival
		}
		// Whole times in a short range: many ties.
		q.push(math.Max(last, 0)+float64(rng.IntN(8)), k, uint32(n))
	}
	if got := len(drain(t, &q)) + popped; got != n {
		t.Errorf("%d events came out, %d went in", got, n)
	}
}

// TestEventOrderAcrossRenumbering: when the sequence numbers would wrap,
// the events waiting are renumbered in their order, and those pushed
// after them at the same time still come after them.
func TestEventOrderAcrossRenumbering(t *testing.T) {
	var q events
	q.seq = maxSeq - 10
	for n := 1; n <= 40; n++ {
		k := evDone
		if n%3 == 0 {
			k = evArrival
		}
		q.push(float64(n%4), k, uint32(n))
	}
	if q.seq != 40 {
		t.Fatalf("sequence number %d after 40 pushes across the wrap, want 40: ten renumbered, thirty more", q.seq)
	}
	if got := drain(t, &q); len(got) != 40 {
		t.Errorf("%d events came out, 40 went in", len(got))
	}
}

// TestEventKindsSurviveRenumbering: renumbering keeps each entry's kind
// and whom it happens to.
func TestEventKindsSurviveRenumbering(t *testing.T) {
	var q events
	q.seq = maxSeq - 3
	for n := range 14 {
		q.push(float64(n%3), kind(n%int(evTool+1)), uint32(n))
	}
	for q.len() > 0 {
		at, _ := q.popBy(math.Inf(1))
		if want := kind(int(at.ref) % int(evTool+1)); at.kind() != want {
			t.Errorf("event %d of kind %d came back as kind %d", at.ref, want, at.kind())
		}
	}
}
