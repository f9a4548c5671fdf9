package measure

import (
	"slices"

	"github.com/plannerdev/planner/internal/model"
)

// ConnStats is how the requests of a step (or of a run) got their
// connections (docs/probe.md, "Connections"): how many opened a new one
// and how many reused one kept alive, what a new connection's set-up
// cost, and the time to the answer's first byte on each kind. Requests
// that got no connection (a failed dial) and rows without the connection
// columns are not counted.
type ConnStats struct {
	Requests int `json:"requests" doc:"Requests that got a connection, warm-up included."`
	New      int `json:"new" doc:"Of them, those that opened a new connection."`
	Reused   int `json:"reused" doc:"Of them, those that reused a connection kept alive."`
	Measured int `json:"measured" doc:"Requests after the warm-up that got a connection."`
	// NewMeasured counts the measured requests that opened a connection:
	// once a step's warm-up has opened its c connections, a client that
	// keeps them alive opens none.
	NewMeasured int `json:"new_measured" doc:"Measured requests (after the warm-up) that opened a new connection."`
	// The means of a new connection's set-up and of its phases, over the
	// new connections whose phase was reported.
	SetupMeanMs   float64 `json:"setup_mean_ms,omitempty" doc:"Mean wait for a new connection: its whole set-up."`
	DNSMeanMs     float64 `json:"dns_mean_ms,omitempty"`
	ConnectMeanMs float64 `json:"connect_mean_ms,omitempty"`
	TLSMeanMs     float64 `json:"tls_mean_ms,omitempty"`
	// TTFB medians: the time from the send to the answer's first byte on
	// a new connection (set-up included) and on a reused one.
	TTFBNewP50Ms    float64 `json:"ttfb_new_p50_ms,omitempty" doc:"Median time to the answer's first byte on a new connection, set-up included."`
	TTFBReusedP50Ms float64 `json:"ttfb_reused_p50_ms,omitempty" doc:"Median time to the answer's first byte on a reused connection."`
}

// MinReuseJudged is the least number of measured requests on which a
// step's connection reuse is judged (ConnStats.NotReused).
const MinReuseJudged = 10

// SummarizeConns summarises the connections of recs; nil when no record
// says how it got its connection.
func SummarizeConns(recs []Record) *ConnStats {
	var c ConnStats
	var setup, dns, connect, tls mean
	var ttfbNew, ttfbReused []float64
	for _, r := range recs {
		if r.Conn != ConnNew && r.Conn != ConnReused {
			continue
		}
		c.Requests++
		fresh := r.Conn == ConnNew
		if !r.Warmup {
			c.Measured++
			if fresh {
				c.NewMeasured++
			}
		}
		if !fresh {
			c.Reused++
			if r.TTFBMs > 0 {
				ttfbReused = append(ttfbReused, r.TTFBMs)
			}
			continue
		}
		c.New++
		setup.add(r.ConnWaitMs)
		dns.add(r.DNSMs)
		connect.add(r.ConnectMs)
		tls.add(r.TLSMs)
		if r.TTFBMs > 0 {
			ttfbNew = append(ttfbNew, r.TTFBMs)
		}
	}
	if c.Requests == 0 {
		return nil
	}
	c.SetupMeanMs, c.DNSMeanMs, c.ConnectMeanMs, c.TLSMeanMs = setup.value(), dns.value(), connect.value(), tls.value()
	c.TTFBNewP50Ms, c.TTFBReusedP50Ms = median(ttfbNew), median(ttfbReused)
	return &c
}

// NotReused reports whether most measured requests opened a new
// connection, judged on at least MinReuseJudged of them: the client or
// the endpoint (or a proxy between them) does not keep connections
// alive, and each request pays the set-up (a TCP and a TLS handshake, one
// to three round trips) in its TTFT.
func (c *ConnStats) NotReused() bool {
	return c != nil && c.Measured >= MinReuseJudged && 2*c.NewMeasured > c.Measured
}

// mean is a running mean of the positive values added (a phase that was
// not reported adds 0 and does not count).
type mean struct {
	sum float64
	n   int
}

func (m *mean) add(v float64) {
	if v > 0 {
		m.sum += v
		m.n++
	}
}

func (m mean) value() float64 {
	if m.n == 0 {
		return 0
	}
	return m.sum / float64(m.n)
}

// median is the type-7 median of xs (model.QuantileSorted), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return model.QuantileSorted(xs, 0.5)
}
