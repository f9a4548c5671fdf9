package plan

import (
	"context"
	"fmt"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

// Workload is one class's requests as the plan models them: what a request
// asks for and how long the endpoint takes to answer it at any load. A
// simulation draws its requests from it, so that it runs the same model
// the plan predicts with.
type Workload struct {
	Class string
	// Endpoint names the endpoint the class sends to; classes with the same
	// name share it, so their latency follows their total in flight. A
	// class with a latency profile of its own has the endpoint to itself
	// and its name is "class:" + its name.
	Endpoint string
	// Use is what one request counts against each limit of the class's key
	// (quota.Key.Use, with max_tokens under max_tokens accounting).
	Use quota.Vector
	// Task is what an agent task class's tasks are made of, nil for a
	// class of single calls: At and Use are then a call's and a task's.
	Task *TaskLaw
	m    *classModel
}

// At is the service time of one request with inFlight requests on the
// endpoint (at least 1): TTFT, TPOT, input and output tokens (clipped to
// [1, max_tokens]) as independent distributions. It is the model's own,
// shared by every request at that load (a copy would cost a simulation
// more than the draws): the caller must not modify it.
func (w Workload) At(inFlight int) *model.Service { return &w.m.at(inFlight).svc }

// QuantileAt is the p-quantile, seconds, without queue wait, with
// inFlight requests on the class's endpoint, of its TTFT (ttft; an agent
// task's calls each) or else of its service time (an agent task's time T).
func (w Workload) QuantileAt(ctx context.Context, inFlight int, ttft bool, p float64) (float64, error) {
	return w.m.quantileAt(ctx, w.m.at(inFlight), nil, model.Wait{}, map[bool]percentile{true: pctTTFT, false: pctService}[ttft], p)
}

// Extrapolated reports whether the latency at inFlight lies outside the
// measured curve.
func (w Workload) Extrapolated(inFlight int) bool { return w.m.at(inFlight).extrapolated }

// Workloads returns the workload of every class of a valid scenario, in the
// scenario's order. A Workload is not safe for concurrent use.
func (e *Engine) Workloads(ctx context.Context, s scenario.Scenario) ([]Workload, error) {
	if errs := s.Check(); len(errs) > 0 {
		return nil, errs
	}
	s = s.WithDefaults()
	draws := e.drawsFor(*s.Policy.Seed, s.Policy.MonteCarloDraws)
	out := make([]Workload, len(s.Classes))
	for i, c := range s.Classes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var key quota.Key
		for _, q := range s.Quotas {
			if q.Name == c.Quota {
				key = quota.Key{Quota: q}
			}
		}
		m, err := newClassModel(e, c, key, s.Policy, draws)
		if err != nil {
			return nil, scenario.Errors{{Path: fmt.Sprintf("classes[%d]", i), Message: err.Error()}}
		}
		ep := c.Endpoint
		if ep == "" {
			ep = "class:" + c.Name
		}
		out[i] = Workload{Class: c.Name, Endpoint: ep, Use: m.use, m: m}
		if m.task != nil {
			out[i].Task = &m.task.law
		}
	}
	return out, nil
}
