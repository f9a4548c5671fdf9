package scenario

// Defaults of the scenario (docs/scenario.md), applied by WithDefaults.
const (
	DefaultHeadroom          = 0.9
	DefaultBurstWindowS      = 1.0
	DefaultActiveHours       = 24.0
	DefaultTokenAccounting   = AccountingActual
	DefaultAllocation        = AllocationPriority
	DefaultMonteCarloDraws   = 20000
	DefaultSeed              = uint64(1)
	DefaultMaxPool           = 1000
	DefaultMaxUtilization    = 0.95
	DefaultWeight            = 1.0
	DefaultArrivalSCV        = 1.0
	DefaultSafetyInteractive = 0.7
	DefaultSafetySemi        = 0.8
	DefaultSafetyBatch       = 1.0
	DefaultCurrency          = "USD"
)

// Enumerated values of the scenario.
const (
	AccountingActual    = "actual"
	AccountingMaxTokens = "max_tokens"
	AllocationPriority  = "priority"
	AllocationWeighted  = "weighted"
	ModeInteractive     = "interactive"
	ModeSemi            = "semi"
	ModeBatch           = "batch"
)

// WithDefaults returns a copy of s with every omitted setting filled in, and
// each class's latency profile resolved: its endpoint's (Endpoint names it,
// DefaultEndpoint for the top-level latency), or its own (Endpoint stays
// empty: an endpoint no other class shares).
// Slices and pointers that it fills are new; the rest are shared with s.
func (s Scenario) WithDefaults() Scenario {
	out := s
	out.Quotas = make([]Quota, len(s.Quotas))
	for i, q := range s.Quotas {
		setDefault(&q.Headroom, DefaultHeadroom)
		setDefault(&q.BurstWindowS, DefaultBurstWindowS)
		setDefault(&q.ActiveHours, DefaultActiveHours)
		if q.TokenAccounting == "" {
			q.TokenAccounting = DefaultTokenAccounting
		}
		if q.Price != nil && q.Price.Currency == "" {
			pr := *q.Price
			pr.Currency = pr.CurrencyOr()
			q.Price = &pr
		}
		out.Quotas[i] = q
	}
	endpoints := map[string]Latency{}
	for _, e := range s.Endpoints {
		endpoints[e.Name] = e.Latency
	}
	out.Classes = make([]Class, len(s.Classes))
	for i, c := range s.Classes {
		setDefault(&c.Weight, DefaultWeight)
		if c.ArrivalSCV == nil {
			v := DefaultArrivalSCV
			c.ArrivalSCV = &v
		}
		if c.Task != nil && c.Task.Context == "" {
			t := *c.Task
			t.Context = ContextAccumulate
			c.Task = &t
		}
		switch {
		case c.Endpoint != "":
			l := endpoints[c.Endpoint]
			c.Latency = &l
		case c.Latency == nil || c.Latency.IsZero():
			l := s.Latency
			c.Latency, c.Endpoint = &l, DefaultEndpoint
		}
		out.Classes[i] = c
	}
	p := s.Policy
	if p.Allocation == "" {
		p.Allocation = DefaultAllocation
	}
	ks := KneeSafety{}
	if p.KneeSafety != nil {
		ks = *p.KneeSafety
	}
	setDefault(&ks.Interactive, DefaultSafetyInteractive)
	setDefault(&ks.Semi, DefaultSafetySemi)
	setDefault(&ks.Batch, DefaultSafetyBatch)
	p.KneeSafety = &ks
	if p.MonteCarloDraws == 0 {
		p.MonteCarloDraws = DefaultMonteCarloDraws
	}
	if p.Seed == nil {
		seed := DefaultSeed
		p.Seed = &seed
	}
	if p.MaxPool == 0 {
		p.MaxPool = DefaultMaxPool
	}
	setDefault(&p.MaxUtilization, DefaultMaxUtilization)
	out.Policy = p
	return out
}

// Safety is the knee safety factor for a class mode.
func (k KneeSafety) Safety(mode string) float64 {
	switch mode {
	case ModeInteractive:
		return k.Interactive
	case ModeSemi:
		return k.Semi
	}
	return k.Batch
}

func setDefault(v *float64, d float64) {
	if *v == 0 {
		*v = d
	}
}
