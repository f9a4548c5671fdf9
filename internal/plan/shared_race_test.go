//go:build race

package plan

import (
	"context"
	"reflect"
	"runtime"
	"strings"
	"testing"

	planner "github.com/plannerdev/planner"
)

// TestModifiedCachedPlanIsDetected: a caller that changes a plan the cache
// shares, however deep the change, makes the next request for it panic
// with a message that says so, instead of getting the changed plan.
func TestModifiedCachedPlanIsDetected(t *testing.T) {
	for _, modify := range []func(*Plan){
		func(p *Plan) { p.Classes[0].Pool++ },
		func(p *Plan) { *p.Classes[0].MinPool = 0 },
		func(p *Plan) { p.Quotas[0].Utilization["tpm"] = 2 },
		func(p *Plan) { p.Classes[1].Ceilings[0].Detail = "" },
		func(p *Plan) { p.Warnings = append(p.Warnings, "x") },
	} {
		e := New(Options{})
		s := example(t, "three-classes")
		p, err := e.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		modify(p)
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(v.(string), "a cached plan was modified") {
					t.Errorf("recovered %v, want the modification reported", v)
				}
			}()
			_, _ = e.Plan(context.Background(), s)
		}()
	}
}

// TestPlanBytesEstimate: the cache's estimate of a plan's size is within a
// factor of two of what a deep copy of it allocates, for every shipped
// example.
func TestPlanBytesEstimate(t *testing.T) {
	for _, name := range planner.ExampleNames() {
		p := mustPlan(t, example(t, name))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := deepCopy(reflect.ValueOf(p))
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(c)
		allocated := int(after.TotalAlloc - before.TotalAlloc)
		if est := planBytes(p); est < allocated/2 || est > 2*allocated {
			t.Errorf("%s: estimate %d bytes, a copy allocates %d", name, est, allocated)
		}
	}
}
