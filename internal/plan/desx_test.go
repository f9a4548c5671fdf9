package plan

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
)

type desCase struct {
	Var              bool
	SCV, Rho, Lambda float64
	C                int
	Sim              simResult
	MeanS, CS2       float64
}

func (r simResult) MarshalJSON() ([]byte, error) {
	return json.Marshal([]float64{r.ttft95, r.e2e95, r.wait95, r.waitMean})
}
func (r *simResult) UnmarshalJSON(b []byte) error {
	var v []float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.ttft95, r.e2e95, r.wait95, r.waitMean = v[0], v[1], v[2], v[3]
	return nil
}

func desWorkload(t *testing.T, high bool, scv float64) Workload {
	ttft, tpot, out, mt := pct(300, 600), pct(20, 30), pct(200, 500), 1000
	if high {
		ttft, tpot, out, mt = pct(300, 1200), pct(20, 40), pct(150, 900), 2000
	}
	s := scenario.Scenario{
		Quotas:  []scenario.Quota{{Name: "k", RPM: 1e9}},
		Latency: scenario.Latency{TTFTMs: &ttft, TPOTMs: &tpot},
		Classes: []scenario.Class{{Name: "c", Quota: "k", Mode: "interactive", Demand: &scenario.Demand{RPS: 1},
			InputTokens: fixed(500), OutputTokens: out, MaxTokens: mt, ArrivalSCV: f(scv)}},
	}
	ws, err := Workloads(s)
	if err != nil {
		t.Fatal(err)
	}
	return ws[0]
}

func TestDESCollect(t *testing.T) {
	if os.Getenv("DESX") == "" {
		t.Skip()
	}
	var cases []desCase
	for _, high := range []bool{false, true} {
		for _, scv := range []float64{0, 0.5, 1, 2, 4} {
			for _, c := range []int{1, 2, 3, 5, 10, 20, 50} {
				for _, rho := range []float64{0.5, 0.7, 0.8, 0.9, 0.95} {
					w := desWorkload(t, high, scv)
					svc := w.At(c)
					lambda := rho * float64(c) / svc.Mean()
					n := 400000
					if rho >= 0.9 {
						n = 1500000
					}
					sim := simulatePool(w, c, lambda, scv, n, 7)
					cases = append(cases, desCase{Var: high, SCV: scv, Rho: rho, Lambda: lambda, C: c, Sim: sim, MeanS: svc.Mean(), CS2: svc.SCV()})
				}
			}
		}
	}
	b, _ := json.Marshal(cases)
	os.WriteFile("/tmp/desx/cases2.json", b, 0o644)
}

type waitModel func(c int, lambda, meanS, ca2, cs2 float64) model.Wait

func TestDESEvaluate(t *testing.T) {
	if os.Getenv("DESX") == "" {
		t.Skip()
	}
	b, err := os.ReadFile("/tmp/desx/cases.json")
	if err != nil {
		t.Skip()
	}
	var cases []desCase
	json.Unmarshal(b, &cases)
	draws := model.NewDraws(1, 20000)
	wl := map[string]Workload{}
	for _, v := range []int{9, 10, 11, 12, 13} {
		model.Variant = v
		name, wm := fmt.Sprint("v", v), waitModel(model.QueueWaitGIGc)
		var worst, worstOver float64
		bad, over := 0, 0
		var lines []string
		for _, k := range cases {
			key := fmt.Sprint(k.Var, k.SCV)
			w, ok := wl[key]
			if !ok {
				w = desWorkload(t, k.Var, k.SCV)
				wl[key] = w
			}
			svc := w.At(k.C)
			first, total := make([]float64, draws.N), make([]float64, draws.N)
			svc.Fill(draws, first, total)
			wt := wm(k.C, k.Lambda, svc.Mean(), k.SCV, svc.SCV())
			tmp := make([]float64, draws.N)
			pt := model.QuantileWithWait(first, draws, wt, 0.95, tmp)
			pe := model.QuantileWithWait(total, draws, wt, 0.95, tmp)
			et, ee := pt/k.Sim.ttft95-1, pe/k.Sim.e2e95-1
			e := math.Min(et, ee)
			o := math.Max(et, ee)
			if e < -0.05 {
				bad++
			}
			if o > 0.2 {
				over++
			}
			worst = math.Min(worst, e)
			worstOver = math.Max(worstOver, o)
			lines = append(lines, fmt.Sprintf("var=%v scv=%g c=%d rho=%.2f ttft %+.0f%% e2e %+.0f%%  wait %.2f/%.2f", k.Var, k.SCV, k.C, k.Rho, 100*et, 100*ee, wt.Expected(), k.Sim.waitMean))
		}
		os.WriteFile("/tmp/desx/"+name+".txt", []byte(fmt.Sprint(lines)), 0o644)
		t.Logf("%s: %d cases, %d under -5%%, %d over +20%%, worst under %.0f%%, worst over %.0f%%", name, len(cases), bad, over, 100*worst, 100*worstOver)
	}
}
