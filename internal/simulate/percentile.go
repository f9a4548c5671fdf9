package simulate

// atPercentile adds to a class's simulated figures its TTFT and E2E at the
// percentile its SLO names, when it names one, from the same reservoirs of
// completed requests as the p50, p95 and p99: for an agent task, TTFT
// from its calls' and E2E from the whole tasks'.
func (c *client) atPercentile(sm *Simulated) {
	slo := c.spec.SLO
	if slo == nil || slo.Percentile <= 0 {
		return
	}
	p := slo.At()
	sm.Percentile = &p
	rows := c.st.latency.all()
	ttft := quantiles(rows, func(r [2]float64) float64 { return r[0] }, p/100)
	if c.w.Task != nil {
		ttft = quantiles(c.st.callTTFT.all(), func(v float64) float64 { return v }, p/100)
	}
	e2e := quantiles(rows, func(r [2]float64) float64 { return r[1] }, p/100)
	sm.TTFTMsAtPercentile, sm.E2EMsAtPercentile = msPtr(ttft[0]), msPtr(e2e[0])
}
