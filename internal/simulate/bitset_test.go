package simulate

import (
	"math/rand/v2"
	"testing"
)

// TestBitsetNext: next finds the smallest member at or after i, across
// words, as a scan of a []bool does.
func TestBitsetNext(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 3, 63, 64, 65, 130} {
		b := make(bitset, (n+63)/64)
		in := make([]bool, n)
		for range 4 * n {
			i := rng.IntN(n)
			if in[i] = rng.IntN(3) > 0; in[i] {
				b.set(i)
			} else {
				b.clear(i)
			}
			for from := 0; from <= n; from++ {
				want := -1
				for j := from; j < n; j++ {
					if in[j] {
						want = j
						break
					}
				}
				if got := b.next(from); got != want {
					t.Fatalf("%d members: next(%d) = %d, want %d", n, from, got, want)
				}
			}
		}
	}
}
