package analysis

// isotonic returns the non-decreasing sequence closest to ys in weighted
// least squares, by the pool-adjacent-violators algorithm (Barlow, Bartholomew,
// Bremner and Brunk, Statistical Inference under Order Restrictions, 1972):
// neighbours that break the order are pooled into their weighted mean until
// none does. A dip in a latency series is replaced by the mean of the
// values around it rather than lifted to the highest one before it, so one
// noisy step does not spread to every later concurrency. Weights must be
// positive; a non-positive weight counts as 1.
func isotonic(ys, ws []float64) []float64 {
	type block struct {
		mean, weight float64
		n            int
	}
	blocks := make([]block, 0, len(ys))
	for i, y := range ys {
		w := ws[i]
		if !(w > 0) {
			w = 1
		}
		blocks = append(blocks, block{mean: y, weight: w, n: 1})
		for len(blocks) > 1 {
			last, prev := blocks[len(blocks)-1], blocks[len(blocks)-2]
			if prev.mean <= last.mean {
				break
			}
			w := prev.weight + last.weight
			blocks = blocks[:len(blocks)-2]
			blocks = append(blocks, block{mean: (prev.mean*prev.weight + last.mean*last.weight) / w, weight: w, n: prev.n + last.n})
		}
	}
	out := make([]float64, 0, len(ys))
	for _, b := range blocks {
		for range b.n {
			out = append(out, b.mean)
		}
	}
	return out
}
