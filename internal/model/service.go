package model

import (
	"encoding/binary"
	"math"
)

// Service is the service time of one request on the endpoint,
// S = TTFT + prefill·in + TPOT·(out − 1) (docs/concepts.md, "Service time"), with TTFT, TPOT, the
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

// Moments are E[S], E[S²] and E[S³], exact from the parts' moments: with
// T = TTFT + prefill·in and V = TPOT·D independent, E[V^k] = E[TPOT^k]·E[D^k]
// and E[(T + V)³] = E[T³] + 3E[T²]E[V] + 3E[T]E[V²] + E[V³].
func (s Service) Moments() (m1, m2, m3 float64) {
	t1, t2, t3 := s.TTFT.Mean(), s.TTFT.SecondMoment(), s.TTFT.ThirdMoment()
	if p := s.Prefill; p != 0 {
		i1, i2, i3 := s.In.Mean(), s.In.SecondMoment(), s.In.ThirdMoment()
		t1, t2, t3 = t1+p*i1, t2+2*p*s.TTFT.Mean()*i1+p*p*i2,
			t3+3*p*s.TTFT.SecondMoment()*i1+3*p*p*s.TTFT.Mean()*i2+p*p*p*i3
	}
	o1, o2, o3 := s.Out.Mean(), s.Out.SecondMoment(), s.Out.ThirdMoment()
	d1, d2, d3 := o1-1, o2-2*o1+1, o3-3*o2+3*o1-1
	v1, v2, v3 := s.TPOT.Mean()*d1, s.TPOT.SecondMoment()*d2, s.TPOT.ThirdMoment()*d3
	return t1 + v1, t2 + 2*t1*v1 + v2, t3 + 3*t2*v1 + 3*t1*v2 + v3
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

// Lognormal is a lognormal with the exact mean and variance of S
// (Fenton–Wilkinson moment matching; Fenton, IRE Trans. Commun. Syst. 8(1),
// 1960): a closed-form stand-in for S that searches use to bracket an
// answer, never as the answer.
func (s Service) Lognormal() Dist { return momentLognormal(s.Mean(), s.Var()) }

// TTFTLognormal is Lognormal for the time to first token,
// TTFT + prefill·in; without a prefill slope it is the TTFT itself.
func (s Service) TTFTLognormal() Dist {
	if s.Prefill == 0 {
		return s.TTFT
	}
	return momentLognormal(s.MeanTTFT(), s.TTFT.Var()+s.Prefill*s.Prefill*s.In.Var())
}

func momentLognormal(mean, variance float64) Dist {
	d, err := LognormalMeanStd(mean, math.Sqrt(math.Max(0, variance)))
	if err != nil {
		return Fixed(math.Max(0, mean))
	}
	return d
}

// Parts is one Monte Carlo sample of each part of a service time, one
// value per draw: TTFT, TPOT, input tokens (nil without a prefill slope)
// and output tokens. A part depends only on its distribution and its draws,
// so classes that share a distribution share its sample.
type Parts struct {
	TTFT, TPOT, In, Out []float64
}

// SampleParts draws every part of s from d.
func (s Service) SampleParts(d *Draws) Parts {
	p := Parts{TTFT: s.TTFT.SampleAll(d.ZTTFT), TPOT: s.TPOT.SampleAll(d.ZTPOT), Out: s.Out.SampleAll(d.ZOut)}
	if s.Prefill != 0 {
		p.In = s.In.SampleAll(d.ZIn)
	}
	return p
}

// Fill writes one Monte Carlo sample per draw: ttft[i] = TTFT + prefill·in
// and total[i] = S, both in seconds. Both slices must have length d.N.
func (s Service) Fill(d *Draws, ttft, total []float64) {
	s.FillParts(s.SampleParts(d), ttft, total)
}

// FillTotal is the total of FillParts alone, for a service time without a
// prefill term (whose TTFT is the TTFT part itself).
func (s Service) FillTotal(p Parts, total []float64) {
	for i := range total {
		total[i] = p.TTFT[i] + p.TPOT[i]*(p.Out[i]-1)
	}
}

// FillParts is Fill from parts already drawn.
func (s Service) FillParts(p Parts, ttft, total []float64) {
	for i := range ttft {
		t := p.TTFT[i]
		if p.In != nil {
			t += s.Prefill * p.In[i]
		}
		ttft[i] = t
		total[i] = t + p.TPOT[i]*(p.Out[i]-1)
	}
}

// AppendTTFTKey appends a binary encoding that identifies the time to
// first token exactly (TTFT, and the prefill term when there is one): the
// cache key of what classes with different answers but the same TTFT
// share.
func (s Service) AppendTTFTKey(b []byte) []byte {
	b = s.TTFT.AppendKey(b)
	if s.Prefill != 0 {
		b = s.In.AppendKey(b)
	}
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Prefill))
}

// AppendKey appends a binary encoding that identifies the service time
// exactly, for use as a cache key.
func (s Service) AppendKey(b []byte) []byte {
	for _, d := range []Dist{s.TTFT, s.TPOT, s.In, s.Out} {
		b = d.AppendKey(b)
	}
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Prefill))
}
