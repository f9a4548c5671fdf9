package plan

import (
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// TaskPlan is what one agent task of a class asks for (docs/concepts.md,
// "Agent tasks"): the class's demand, pool, quota use and ceilings count
// tasks, and these are the per-task figures they come from.
type TaskPlan struct {
	Calls            float64 `json:"calls" doc:"E[n], the mean calls of a task: the requests a task sends."`
	InputTokens      float64 `json:"input_tokens" doc:"Mean input tokens of a task, every call's together (with accumulate each call carries the task's earlier outputs and tool results)."`
	CachedTokens     float64 `json:"cached_input_tokens,omitempty" doc:"Mean input tokens of a task read from the prompt cache, every call's together: cached_input_fraction of each call's input or, with accumulate and latency.cache, the hit rate of each call's earlier context."`
	OutputTokens     float64 `json:"output_tokens" doc:"Mean output tokens of a task, every call's together (capped at max_tokens)."`
	TimeMs           float64 `json:"time_ms" doc:"E[T] = E[Σ (S_i + tool_i)], the mean time a task holds its pool slot, milliseconds."`
	CallTimeMs       float64 `json:"call_time_ms" doc:"E[Σ S_i], the part of E[T] spent in calls, milliseconds."`
	InCallShare      float64 `json:"in_call_share" doc:"p = E[Σ S_i] / E[T]: the probability that a task in flight is in a call."`
	TasksInFlight    float64 `json:"tasks_in_flight,omitempty" doc:"Little's law on tasks: the task rate × E[T], the tasks in flight at the stated demand."`
	CallsInFlightP95 int     `json:"calls_in_flight_p95" doc:"The 95th percentile of calls in flight with the pool full of tasks (binomial over the pool with p): what the pool counts against its endpoint's knee budget."`
}

// TaskLaw is what an agent task is made of, as the plan draws it: the
// calls of a task (each draw rounded by TaskCalls), the tool run after
// each call (seconds), the tokens each tool run returns, and whether
// each call carries the task's earlier outputs and tool results.
type TaskLaw struct {
	Calls, ToolS, Result model.Dist
	Accumulate           bool
	// Cache is the prompt cache of an accumulating task's calls; nil
	// without latency.cache, when each call's prefill and charge follow
	// cached_input_fraction alone.
	Cache *PrefixCache
}

// TaskCalls is a draw of a task's calls as a whole number of them, in
// [1, scenario.MaxTaskCalls].
func TaskCalls(x float64) int {
	return int(math.Max(1, math.Min(scenario.MaxTaskCalls, math.Round(x))))
}

// taskModel is an agent task as the plan models it: n serial calls, each
// S_i followed by a tool run of tool_i; with accumulate, call i's input is
// the first input plus every earlier output and tool result.
type taskModel struct {
	spec            scenario.Task
	law             TaskLaw
	calls, calls2   float64 // E[n] and E[n²], from the Monte Carlo sample of n
	in, out         float64 // E[Σ in_i], E[Σ out_i] per task
	cached          float64 // E[Σ cached_i] per task
	prefill         float64 // E[Σ prefill_i], seconds, from the Monte Carlo with a prefix cache
	llm, tool, mean float64 // E[Σ S_i], E[Σ tool_i] and E[T], seconds
	p               float64 // E[Σ S_i] / E[T]
	in99            float64 // the p99 of a task's largest call input
	p95             map[int]int
}

// taskStream is the PCG stream of the draws of agent tasks ("tasks"),
// apart from the shared columns of model.Draws.
const taskStream = 0x7461736b73

// newTask builds class m's task model and its service time: a task's
// time T and, for TTFT, one sample of every call in turn; pc is the
// prompt cache of its calls' earlier context, nil without one.
func (m *classModel) newTask(t scenario.Task, call model.Service, pc *PrefixCache) error {
	calls, err := dist(t.Calls)
	if err != nil {
		return fmt.Errorf("task.calls: %w", err)
	}
	tool, result := model.Fixed(0), model.Fixed(0)
	if t.ToolMs != nil {
		if tool, err = msDist(*t.ToolMs); err != nil {
			return fmt.Errorf("task.tool_ms: %w", err)
		}
	}
	if t.ToolResultTokens != nil {
		if result, err = dist(*t.ToolResultTokens); err != nil {
			return fmt.Errorf("task.tool_result_tokens: %w", err)
		}
	}
	n := m.draws.N
	first, total := make([]float64, 0, n), make([]float64, n)
	var last []float64 // the last call's input of each task, with accumulate
	if t.Accumulates() {
		last = make([]float64, n)
	}
	r := rand.New(rand.NewPCG(m.draws.Seed, taskStream))
	var sumN, sumN2, sumIn, sumCached, sumPrefill float64
	acc := t.Accumulates()
	for j := range n {
		k := float64(TaskCalls(calls.Sample(r.NormFloat64())))
		sumN += k
		sumN2 += k * k
		in := call.In.Sample(r.NormFloat64())
		carried, prefix, T := 0.0, 0.0, 0.0
		for range int(k) {
			if !acc {
				in = call.In.Sample(r.NormFloat64())
			}
			if last != nil {
				last[j] = in + carried
			}
			prefill := call.Prefill * (in + carried)
			if pc != nil {
				cached := pc.Cached(in+carried, prefix)
				prefill = pc.PrefillS(in+carried, cached)
				sumIn += in + carried
				sumCached += cached
				sumPrefill += prefill
			}
			ttft := call.TTFT.Sample(r.NormFloat64()) + prefill
			out := call.Out.Sample(r.NormFloat64())
			T += ttft + call.TPOT.Sample(r.NormFloat64())*(out-1) + tool.Sample(r.NormFloat64())
			prefix = in + carried + out
			if acc {
				carried += out + result.Sample(r.NormFloat64())
			}
			if len(first) < n {
				first = append(first, ttft)
			}
		}
		total[j] = T
	}
	tm := &taskModel{spec: t, law: TaskLaw{Calls: calls, ToolS: tool, Result: result, Accumulate: acc, Cache: pc},
		calls: sumN / float64(n), calls2: sumN2 / float64(n), p95: map[int]int{}}
	if pc != nil {
		tm.prefill = sumPrefill / float64(n)
	}
	tm.moments(call, tool.Mean(), result.Mean())
	if pc == nil {
		tm.cached = m.spec.CachedInputFraction * tm.in
	} else if sumIn > 0 {
		// The share of the input read from the cache is the Monte
		// Carlo's, of its own draws' input, and the input the exact mean
		// (moments): the reads are never more than the input, and all of
		// it where every call's input is read from the cache.
		tm.cached = tm.in * sumCached / sumIn
	}
	tm.in99 = call.In.Quantile(0.99)
	if last != nil {
		slices.Sort(last)
		tm.in99 = model.QuantileSorted(last, 0.99)
	}
	m.task = tm
	m.use = tm.use(m.key, m.spec, m.cachedFraction())

	key := call.AppendKey(drawsKey(m.draws))
	key = append(key, 'T', boolByte(acc))
	for _, d := range []model.Dist{calls, tool, result} {
		key = d.AppendKey(key)
	}
	if pc != nil {
		key = fmt.Appendf(key, "C%v,%v,%v,%v,%v", pc.HitRate, pc.MinPrefix, pc.Fraction, pc.Prefill, pc.Saving)
	}
	s := &service{svc: call, key: sha256.Sum256(key), first: first, total: total}
	s.ttftKey = sha256.Sum256(append(key, 't'))
	var t1, t2, t3 float64
	for _, v := range total {
		t1, t2, t3 = t1+v, t2+v*v, t3+v*v*v
	}
	t1, t2, t3 = t1/float64(n), t2/float64(n), t3/float64(n)
	s.mean = tm.mean
	if tm.mean > 0 {
		s.scv = math.Max(0, t2-t1*t1) / (tm.mean * tm.mean)
	}
	if t2 > 0 {
		s.tail = t1 * t3 / (t2 * t2)
	}
	m.static = s
	return nil
}

// callFlow turns a flow of tasks into the flow of their calls at a key's
// pacing bucket: E[n] calls a task, each carrying on average the task's
// mean input per call, E[Σ in_i]/E[n], rather than the first call's in:
// the charge's moments shift by δ = admIn·(E[Σ in_i]/E[n] − in).
func (t *taskModel) callFlow(f *flow, in float64) {
	d := f.admIn * (t.in/t.calls - in)
	f.m3 += 3*d*f.m2 + 3*d*d*f.m1 + d*d*d
	f.m2 += 2*d*f.m1 + d*d
	f.m1 += d
	f.rate *= t.calls
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// moments sets the per-task means from E[n] and E[n²], the means of a
// call's parts, of a tool run (tool, seconds) and of a tool result
// (result, tokens), n independent of them:
//
//	E[Σ in_i]  = E[n]·E[in] + E[n(n−1)/2]·(E[out] + E[result])  (accumulate)
//	E[Σ in_i]  = E[n]·E[in]                                     (fresh)
//	E[Σ out_i] = E[n]·E[out]
//	E[Σ S_i]   = E[n]·(E[TTFT] + E[TPOT]·(E[out] − 1)) + prefill·E[Σ in_i]
//	E[T]       = E[Σ S_i] + E[n]·E[tool]
//
// since call i carries the i − 1 earlier outputs and results, and
// Σ_{i=1}^{n} (i − 1) = n(n − 1)/2 (Wald's identity for the sums over a
// random n). With a prefix cache, whose cached tokens depend on each
// call's prefix through its minimum, prefill·E[Σ in_i] is the Monte
// Carlo's E[Σ prefill_i] and E[Σ cached_i] is E[Σ in_i] times the share
// of its draws' input that the Monte Carlo reads from the cache; without
// it, E[Σ cached_i] = r·E[Σ in_i].
func (t *taskModel) moments(call model.Service, tool, result float64) {
	in, out := call.In.Mean(), call.Out.Mean()
	t.in = t.calls * in
	if t.spec.Accumulates() {
		t.in += (t.calls2 - t.calls) / 2 * (out + result)
	}
	t.out = t.calls * out
	prefill := call.Prefill * t.in
	if t.law.Cache != nil {
		prefill = t.prefill
	}
	t.llm = t.calls*(call.TTFT.Mean()+call.TPOT.Mean()*(out-1)) + prefill
	t.tool = t.calls * tool
	t.mean = t.llm + t.tool
	t.p = 1
	if t.mean > 0 {
		t.p = t.llm / t.mean
	}
}

// use is what one task counts against each limit of the key: E[n]
// requests, and the task's tokens as one request of E[Σ in_i] input, a
// share cached of it read from the cache, and E[Σ out_i] output
// (E[n]·max_tokens under max_tokens accounting) would.
func (t *taskModel) use(k quota.Key, c scenario.Class, cached float64) quota.Vector {
	v := k.Use(quota.Request{MeanIn: t.in, MeanOut: t.out, MaxTokens: t.calls * float64(c.MaxTokens), CachedFraction: cached})
	for d := range scenario.NumDimensions {
		if d.Charge() == scenario.ChargeRequest {
			v[d] = t.calls
		}
	}
	return v
}

// callsInFlight95 is the 95th percentile of calls in flight with c tasks
// in flight: each is in a call with probability p, independently, so the
// count is binomial(c, p); its quantile is summed exactly up to
// exactBinomialPool tasks and taken from the normal approximation
// c·p + z₀.₉₅·√(c·p·(1 − p)), rounded up, beyond.
func (t *taskModel) callsInFlight95(c int) int {
	if c <= 0 || t.p >= 1 {
		return max(0, c)
	}
	if v, ok := t.p95[c]; ok {
		return v
	}
	v := binomialQuantile(c, t.p, 0.95)
	t.p95[c] = v
	return v
}

// exactBinomialPool is the largest pool whose calls in flight are summed
// from the binomial distribution itself.
const exactBinomialPool = 2000

// z95 is the standard normal's 95th percentile.
const z95 = 1.6448536269514722

func binomialQuantile(c int, p, q float64) int {
	if p <= 0 {
		return 0
	}
	if c > exactBinomialPool {
		mu := float64(c) * p
		return min(c, int(math.Ceil(mu+z95*math.Sqrt(mu*(1-p))-tolerance)))
	}
	lc, _ := math.Lgamma(float64(c + 1))
	lp, lq := math.Log(p), math.Log1p(-p)
	cdf := 0.0
	for k := 0; k < c; k++ {
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(c - k + 1))
		cdf += math.Exp(lc - lk - lnk + float64(k)*lp + float64(c-k)*lq)
		if cdf >= q*(1-tolerance) {
			return k
		}
	}
	return c
}

// slotUse is what a pool of c of class i counts against its endpoint's
// in-flight budgets: c requests, or for an agent task the p95 of its calls
// in flight.
func (r *run) slotUse(i, c int) float64 {
	if t := r.models[i].task; t != nil {
		return float64(t.callsInFlight95(c))
	}
	return float64(c)
}

// slotCeil is the largest pool of class i whose slot use stays within a:
// ⌊a⌋, or for an agent task the largest pool whose p95 of calls in
// flight does (it never falls as the pool grows).
func (r *run) slotCeil(i int, a float64) int {
	t := r.models[i].task
	n := max(0, int(math.Floor(a+tolerance)))
	if t == nil || n == 0 || t.p >= 1 {
		return n
	}
	if t.callsInFlight95(searchLimit) <= n {
		return searchLimit
	}
	lo, hi := n, searchLimit // calls95(lo) ≤ calls95's bound ≤ n < calls95(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if t.callsInFlight95(mid) <= n {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// taskPlan is the per-task figures of class i with a pool of c.
func (r *run) taskPlan(i, c int) *TaskPlan {
	m := r.models[i]
	t := m.task
	if t == nil {
		return nil
	}
	return &TaskPlan{
		Calls: signed.Round(t.calls, 4), InputTokens: signed.Round(t.in, 2), CachedTokens: signed.Round(t.cached, 2), OutputTokens: signed.Round(t.out, 2),
		TimeMs: ms(t.mean), CallTimeMs: ms(t.llm), InCallShare: signed.Round(t.p, 4),
		TasksInFlight: signed.Round(model.LittleConcurrency(m.lambda, t.mean), 4), CallsInFlightP95: t.callsInFlight95(c),
	}
}

// taskVerdict is the sentence of an agent task class's explanation: what a
// task asks for and, with a demand, Little's law on tasks (tasks in
// flight = task rate × E[T]).
func taskVerdict(t *TaskPlan, lambda float64) string {
	if t == nil {
		return ""
	}
	v := fmt.Sprintf("Its pool, demand and throughput count tasks: a task makes %s calls (%s input and %s output tokens) in %s ms, %s ms of it in calls, so a task in flight is in a call with probability %s.",
		num(t.Calls), num(t.InputTokens), num(t.OutputTokens), num(t.TimeMs), num(t.CallTimeMs), num(t.InCallShare))
	if lambda > 0 {
		v += fmt.Sprintf(" At %s tasks/s Little's law keeps %s × %s s = %s tasks in flight.", num(lambda), num(lambda), num(t.TimeMs/1000), num(t.TasksInFlight))
	}
	return v
}

// taskKneeText is what the knee ceiling of an agent task class adds: the
// pool counts the p95 of its calls in flight, not its tasks.
func (r *run) taskKneeText(i, c int) string {
	t := r.models[i].task
	if t == nil || c <= 0 {
		return ""
	}
	return fmt.Sprintf(" calls in flight; a task is in a call with p = %s, and %d tasks keep binomial(%d, p)'s p95 = %d calls in flight", num(signed.Round(t.p, 4)), c, c, t.callsInFlight95(c))
}

// rateUnit is the unit of the class's rates: tasks for an agent task
// class, requests otherwise.
func (m *classModel) rateUnit() string {
	if m.task != nil {
		return "tasks/s"
	}
	return "req/s"
}

// sendUnit is what one arrival of the class is: a task for an agent task
// class, a request otherwise.
func (m *classModel) sendUnit() string {
	if m.task != nil {
		return "task"
	}
	return "request"
}

// serviceName names what holds one of the class's pool slots: a
// request's service time, or a task's time.
func (m *classModel) serviceName() string {
	if m.task != nil {
		return "E[T]"
	}
	return "E[S]"
}

// firstCallWait is the wait for a pool slot as a task's calls see it:
// only a task's first call waits for a slot, and it is one of E[n] calls,
// so a call waits with probability P(W > 0)/E[n], as long as a first
// call's wait when it does (the TTFT of a call taken as independent of
// whether it is the first: the first call's input is the shortest, so
// this errs on the safe side).
func (t *taskModel) firstCallWait(w model.Wait) model.Wait {
	w.Prob /= t.calls
	return w
}

// callUse is what one send of the class counts on dimension d on
// average: a request's use, or for an agent task a task's spread over
// its E[n] calls, so that pacing paces calls.
func (m *classModel) callUse(d scenario.Dimension) float64 { return m.use[d] / m.callsPer() }

// cachedFraction is the share of the class's input read from the prompt
// cache, as its key counts it: cached_input_fraction, or for an
// accumulating agent task with a prefix cache E[Σ cached_i]/E[Σ in_i].
func (m *classModel) cachedFraction() float64 {
	if t := m.task; t != nil && t.law.Cache != nil && t.in > 0 {
		return t.cached / t.in
	}
	return m.spec.CachedInputFraction
}

// callsPer is the mean calls of what the class's pool holds: E[n] for an
// agent task, 1 for a request.
func (m *classModel) callsPer() float64 {
	if t := m.task; t != nil {
		return t.calls
	}
	return 1
}

// inputP99 is the p99 of the input of the class's largest request, which
// the per-window checks hold to one window: a request's, or with an
// accumulating agent task the p99 over tasks of the last call's, which
// carries the whole earlier context (the Monte Carlo's draws).
func (m *classModel) inputP99() float64 {
	if t := m.task; t != nil {
		return t.in99
	}
	return m.base.In.Quantile(0.99)
}
