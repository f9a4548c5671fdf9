package scenario

// DefaultPercentile is the percentile of an SLO that names none, and the
// one of the older ttft_p95_ms and e2e_p95_ms.
const DefaultPercentile = 95.0

// TTFT is the TTFT target in milliseconds, in either form; 0 when none.
func (s SLO) TTFT() float64 {
	if s.TTFTMs > 0 {
		return s.TTFTMs
	}
	return s.TTFTP95Ms
}

// E2E is the E2E target in milliseconds, in either form; 0 when none.
func (s SLO) E2E() float64 {
	if s.E2EMs > 0 {
		return s.E2EMs
	}
	return s.E2EP95Ms
}

// TPOT is the TPOT target in milliseconds; 0 when none.
func (s SLO) TPOT() float64 { return s.TPOTMs }

// TaskE2E is the target on a whole agent task in milliseconds, in either
// form (at the percentile, or at the 95th with the older one); 0 when
// none.
func (s SLO) TaskE2E() float64 { return s.TaskE2EMs }

// IsZero reports whether the SLO sets no target: every target absent or
// 0, which is no target.
func (s SLO) IsZero() bool {
	return s.TTFT() == 0 && s.E2E() == 0 && s.TPOT() == 0 && s.TaskE2E() == 0
}

// At is the percentile the targets bind: percentile when given, else 95.
func (s SLO) At() float64 {
	if s.Percentile > 0 {
		return s.Percentile
	}
	return DefaultPercentile
}

// check adds the rules of an SLO that span its fields: one form only, and
// a percentile only with the form that takes it.
func (c *checker) slo(p string, s SLO) {
	legacy := s.TTFTP95Ms > 0 || s.E2EP95Ms > 0
	if !legacy {
		return
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"ttft_ms", s.TTFTMs > 0}, {"e2e_ms", s.E2EMs > 0}, {"tpot_ms", s.TPOTMs > 0}, {"percentile", s.Percentile > 0}} {
		if f.set {
			c.add(p+"."+f.name, "give ttft_ms, e2e_ms and tpot_ms with percentile, or the older ttft_p95_ms and e2e_p95_ms, not both: move ttft_p95_ms and e2e_p95_ms to ttft_ms and e2e_ms")
			return
		}
	}
}
