package plan

import (
	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
)

// dist builds the model distribution of a validated scenario distribution.
func dist(d scenario.Dist) (model.Dist, error) {
	var out model.Dist
	var err error
	switch {
	case d.Fixed != nil:
		out = model.Fixed(*d.Fixed)
	case d.P50 != nil:
		out, err = model.LognormalP50P95(*d.P50, *d.P95)
	case d.Mean != nil:
		out, err = model.LognormalMeanStd(*d.Mean, *d.Stddev)
	default:
		out, err = model.Empirical(d.Samples)
	}
	if err != nil {
		return model.Dist{}, err
	}
	if d.Max != nil {
		out = out.Clip(0, *d.Max)
	}
	return out, nil
}

// msDist is dist for a latency in milliseconds, returned in seconds.
func msDist(d scenario.Dist) (model.Dist, error) {
	scale := func(p *float64) *float64 {
		if p == nil {
			return nil
		}
		v := *p / 1000
		return &v
	}
	s := scenario.Dist{Fixed: scale(d.Fixed), P50: scale(d.P50), P95: scale(d.P95), Mean: scale(d.Mean), Stddev: scale(d.Stddev), Max: scale(d.Max)}
	if d.Samples != nil {
		s.Samples = make([]float64, len(d.Samples))
		for i, v := range d.Samples {
			s.Samples[i] = v / 1000
		}
	}
	return dist(s)
}
