package measure

// KneeStep is the step measured at the knee; false without a knee (or
// when no step has its concurrency).
func (r Result) KneeStep() (Step, bool) {
	if r.Knee == nil {
		return Step{}, false
	}
	for _, s := range r.Steps {
		if s.Concurrency == *r.Knee && !s.Refine {
			return s, true
		}
	}
	return Step{}, false
}
