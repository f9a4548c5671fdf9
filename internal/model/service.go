package model

import (
	"encoding/binary"
	"math"
)

// Service is the service time of one request on the endpoint,
// S = TTFT + prefill·in + TPOT·(out − 1) (DESIGN §3.2), with TTFT, TPOT, the
// input length and the output length independent.
type Service struct {
	TTFT    Dist    // time to first token without the prefill slope, seconds
	TPOT    Dist    // time per output token after the first, seconds
	In      Dist    // input tokens
	Out     Dist    // output tokens, clipped to [1, max_tokens]
	Prefill float64 // extra TTFT per input token, seconds
}

// decode is D = out − 1, the tokens that follow the first: E[D] and E[D²].
func (s Service) decode() (m1, m2 float64) {
	mo, mo2 := s.Out.Mean(), s.Out.SecondMoment()
	return mo - 1, mo2 - 2*mo + 1
}

// MeanTTFT is E[TTFT + prefill·in].
func (s Service) MeanTTFT() float64 { return s.TTFT.Mean() + s.Prefill*s.In.Mean() }

// Mean is E[S] = E[TTFT] + prefill·E[in] + E[TPOT]·(E[out] − 1), exact from
// the means because the parts are independent.
func (s Service) Mean() float64 {
	d1, _ := s.decode()
	return s.MeanTTFT() + s.TPOT.Mean()*d1
}

// Var is Var(S) = Var(TTFT) + prefill²·Var(in) + E[TPOT²]·E[D²] − (E[TPOT]·E[D])²
// with D = out − 1, from the independence of the parts.
func (s Service) Var() float64 {
	d1, d2 := s.decode()
	mv := s.TPOT.Mean()
	vd := s.TPOT.SecondMoment()*d2 - mv*mv*d1*d1
	return math.Max(0, s.TTFT.Var()+s.Prefill*s.Prefill*s.In.Var()+vd)
}

// SCV is the squared coefficient of variation cs² = Var(S)/E[S]², the
// service-time variability that the Allen–Cunneen wait needs.
func (s Service) SCV() float64 {
	m := s.Mean()
	if m <= 0 {
		return 0
	}
	return s.Var() / (m * m)
}

// Fill writes one Monte Carlo sample per draw: ttft[i] = TTFT + prefill·in
// and total[i] = S, both in seconds. Both slices must have length d.N.
func (s Service) Fill(d *Draws, ttft, total []float64) {
	s.FillWith(d, s.Decode(d), ttft, total)
}

// Decode samples out − 1 per draw: the tokens that follow the first. It
// depends only on the output length, so a class whose latency varies with
// load draws it once and passes it to FillWith at every concurrency.
func (s Service) Decode(d *Draws) []float64 {
	dec := make([]float64, d.N)
	for i, z := range d.ZOut {
		dec[i] = s.Out.Sample(z) - 1
	}
	return dec
}

// FillWith is Fill with the decode tokens already drawn (see Decode).
func (s Service) FillWith(d *Draws, decode, ttft, total []float64) {
	for i := range d.N {
		t := s.TTFT.Sample(d.ZTTFT[i])
		if s.Prefill != 0 {
			t += s.Prefill * s.In.Sample(d.ZIn[i])
		}
		ttft[i] = t
		total[i] = t + s.TPOT.Sample(d.ZTPOT[i])*decode[i]
	}
}

// AppendKey appends a binary encoding that identifies the service time
// exactly, for use as a cache key.
func (s Service) AppendKey(b []byte) []byte {
	for _, d := range []Dist{s.TTFT, s.TPOT, s.In, s.Out} {
		b = d.AppendKey(b)
	}
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Prefill))
}
