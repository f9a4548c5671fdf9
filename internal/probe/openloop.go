package probe

import (
	"context"
	"sync"
	"time"

	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/measure"
)

// openLoop runs one open-loop step per rate: Poisson arrivals at the rate,
// whatever the endpoint does; an arrival that finds the in-flight cap
// reached is shed.
type openLoop struct {
	OpenLoop
}

func (o openLoop) check(c Config, p *problems) {
	notSearch(c, p)
	if c.Search {
		p.add("search", "a knee search is a closed loop; it cannot run with open-loop rates")
	}
	if c.Steps != nil {
		p.add("steps", "an open loop runs one step per rate: give steps or rates, not both")
	}
	if c.RequestsPerStep.IsSet() {
		p.add("requests_per_step", "an open loop's steps send open_loop.requests arrivals each: set that instead")
	}
	if len(o.Rates) == 0 || len(o.Rates) > MaxSteps {
		p.add("open_loop.rates_rps", "%d rates, want 1 to %d", len(o.Rates), MaxSteps)
	}
	for i, rate := range o.Rates {
		at := fieldpath.Index("open_loop.rates_rps", i)
		switch {
		case !(rate > 0 && rate <= MaxRateRPS):
			p.add(at, "rate %g rps is outside (0, %g]", rate, MaxRateRPS)
		case i > 0 && rate <= o.Rates[i-1]:
			p.add(at, "the rates must be strictly ascending (%g after %g)", rate, o.Rates[i-1])
		}
	}
	switch n := o.requests(); {
	case o.MaxInFlight < 1 || o.MaxInFlight > MaxConcurrency:
		p.add("open_loop.max_in_flight", "%d requests in flight is outside 1..%d: an open loop needs a cap on them", o.MaxInFlight, MaxConcurrency)
	case n < 1 || n > MaxRequestsPerStep:
		p.add("open_loop.requests", "%d arrivals per rate is outside 1..%d", n, MaxRequestsPerStep)
	default:
		c.checkStepSize(p, "open_loop.requests", o.Requests.IsSet(), o.concurrencies(), func(int) int { return n })
	}
}

func (o openLoop) concurrencies() []int { return []int{o.MaxInFlight} }

// run runs the rates in turn until they end or a stop rule fires.
func (o openLoop) run(ctx context.Context, r *runner) (reason, detail string) {
	for i, rate := range o.Rates {
		if i > 0 && !Sleep(ctx, r.cfg.pause()) {
			return r.stopInPause(ctx, stepName(o.MaxInFlight, o.Rates[i-1]), stepName(o.MaxInFlight, rate))
		}
		recs := o.step(ctx, r, rate)
		r.finishStep(o.MaxInFlight, rate, recs)
		if reason, detail := r.stopAfter(ctx, stepKey{c: o.MaxInFlight, rate: rate}, recs); reason != "" {
			return reason, detail
		}
	}
	return StopCompleted, ""
}

// step runs one open-loop step at rate.
func (o openLoop) step(ctx context.Context, r *runner, rate float64) []measure.Record {
	key := stepKey{c: o.MaxInFlight, rate: rate}
	n := o.requests()
	w := r.cfg.warmupFor(o.MaxInFlight, n)
	r.plan(key, n)
	slots := make(chan struct{}, o.MaxInFlight)
	var mu sync.Mutex
	var recs []measure.Record
	var wg sync.WaitGroup
	due := time.Now()
	for i := 0; i < n && r.budget.exhausted() == ""; i++ {
		if i > 0 {
			due = due.Add(time.Duration(r.sender.rnd.expFloat64() / rate * float64(time.Second)))
			if !Sleep(ctx, time.Until(due)) {
				break
			}
		}
		select {
		case slots <- struct{}{}:
			wg.Go(func() {
				defer func() { <-slots }()
				if rec, ok := r.request(ctx, key, i, i < w, false); ok {
					mu.Lock()
					recs = append(recs, rec)
					mu.Unlock()
				}
			})
		default:
			r.shed.Add(1)
			r.mu.Lock()
			r.shedAt[key]++
			r.mu.Unlock()
		}
	}
	wg.Wait()
	return recs
}
