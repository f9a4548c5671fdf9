package quota

// Bucket is a token bucket: it holds at most Size units and refills
// continuously at Rate units per second. A provider enforces a per-minute
// limit L with one (docs/simulate.md, "Provider"): Rate is L/60 and Size
// what one enforcement window allows, L·burst_window_s/60 in the
// simulation and a whole minute's L at the fake endpoint; a client paces
// its sends with one of its burst. Units counted after admission (output
// tokens under actual accounting) may leave it in debt, below zero.
//
// What differs between its users is a parameter: Size, Slack, and
// Oversize.
type Bucket struct {
	Size, Rate float64
	// Level is what it holds now: Size when full, negative in debt.
	Level float64
	// Slack absorbs floating-point error when a request comes back at the
	// time Wait named: need fits when Level ≥ need − Slack (and an
	// oversized need when Level ≥ Size − Slack).
	Slack float64
	// Oversize lets a full bucket take a need larger than Size, which
	// leaves it in debt, so that no request is refused for ever (a
	// provider); without it such a need never fits.
	Oversize bool
}

// NewBucket is a full bucket.
func NewBucket(size, rate, slack float64, oversize bool) Bucket {
	return Bucket{Size: size, Rate: rate, Level: size, Slack: slack, Oversize: oversize}
}

// Refill adds what seconds of refilling bring, up to Size.
func (b *Bucket) Refill(seconds float64) {
	if seconds > 0 {
		b.Level = min(b.Size, b.Level+b.Rate*seconds)
	}
}

// Fits reports whether need units may be taken now.
func (b *Bucket) Fits(need float64) bool {
	return b.Level >= need-b.Slack || (b.Oversize && b.Level >= b.Size-b.Slack)
}

// Wait is the time, in seconds, until need fits, when nothing else draws on
// the bucket: 0 when it fits now. With Oversize a need larger than Size
// waits for a full bucket.
func (b *Bucket) Wait(need float64) float64 {
	if b.Fits(need) {
		return 0
	}
	if b.Oversize {
		need = min(need, b.Size)
	}
	return (need - b.Level) / b.Rate
}

// Take counts n units now (negative: a refund), without a check; the level
// never rises above Size.
func (b *Bucket) Take(n float64) {
	b.Level = min(b.Size, b.Level-n)
}

// Fill is how full the bucket's use is: 0 when it is full, 1 when empty.
func (b *Bucket) Fill() float64 {
	return 1 - b.Level/b.Size
}
