package plan

import (
	"os"
	"testing"
)

func TestDESNoise(t *testing.T) {
	if os.Getenv("DESX") == "" {
		t.Skip()
	}
	for _, c := range []struct {
		high bool
		scv  float64
		c    int
		rho  float64
	}{{true, 0.25, 5, 0.95}, {false, 0, 5, 0.95}, {false, 1, 10, 0.9}, {true, 1, 1, 0.8}} {
		w := desWorkload(t, c.high, c.scv)
		lambda := c.rho * float64(c.c) / w.At(c.c).Mean()
		for seed := range uint64(4) {
			for _, n := range []int{300000, 1200000} {
				r := simulatePool(w, c.c, lambda, c.scv, n, seed+10)
				t.Logf("%v n=%d seed=%d ttft95 %.0f e2e95 %.0f wait95 %.0f mean %.0f", c, n, seed, r.ttft95*1000, r.e2e95*1000, r.wait95*1000, r.waitMean*1000)
			}
		}
	}
}
