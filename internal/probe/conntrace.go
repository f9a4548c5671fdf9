package probe

import (
	"crypto/tls"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/plannerdev/planner/internal/measure"
)

// connTrace times how one attempt got its connection and the first byte
// of its answer, from the hooks of net/http/httptrace. The hooks may run
// on the transport's goroutines, and a dial that the attempt started may
// still report after it took an idle connection instead, so every field
// is under mu and only the connection the attempt got is reported.
type connTrace struct {
	mu                  sync.Mutex
	getConn, gotConn    time.Time
	got, reused         bool
	dnsStart, dnsDone   time.Time
	connStart, connDone time.Time
	tlsStart, tlsDone   time.Time
	firstByte           time.Time
}

// connTiming is what connTrace measured of one attempt, from its send.
type connTiming struct {
	conn                    string // measure.ConnNew, measure.ConnReused, or "" without a connection
	wait, dns, connect, tls time.Duration
	ttfb                    time.Duration // 0 without an answer
}

// hooks returns the trace that fills t. Each phase runs from its first
// start to its last end: a dial that tries several addresses reports each.
func (t *connTrace) hooks() *httptrace.ClientTrace {
	at := func(f func(now time.Time)) {
		now := time.Now()
		t.mu.Lock()
		f(now)
		t.mu.Unlock()
	}
	first := func(p *time.Time, now time.Time) {
		if p.IsZero() {
			*p = now
		}
	}
	return &httptrace.ClientTrace{
		GetConn: func(string) { at(func(now time.Time) { first(&t.getConn, now) }) },
		GotConn: func(info httptrace.GotConnInfo) {
			at(func(now time.Time) { t.gotConn, t.got, t.reused = now, true, info.Reused })
		},
		DNSStart:             func(httptrace.DNSStartInfo) { at(func(now time.Time) { first(&t.dnsStart, now) }) },
		DNSDone:              func(httptrace.DNSDoneInfo) { at(func(now time.Time) { t.dnsDone = now }) },
		ConnectStart:         func(string, string) { at(func(now time.Time) { first(&t.connStart, now) }) },
		ConnectDone:          func(string, string, error) { at(func(now time.Time) { t.connDone = now }) },
		TLSHandshakeStart:    func() { at(func(now time.Time) { first(&t.tlsStart, now) }) },
		TLSHandshakeDone:     func(tls.ConnectionState, error) { at(func(now time.Time) { t.tlsDone = now }) },
		GotFirstResponseByte: func() { at(func(now time.Time) { first(&t.firstByte, now) }) },
	}
}

// timing reads what the attempt sent at sent measured so far. A reused
// connection reports no set-up phases, whatever a dial abandoned for it
// reported.
func (t *connTrace) timing(sent time.Time) connTiming {
	t.mu.Lock()
	defer t.mu.Unlock()
	var c connTiming
	if !t.firstByte.IsZero() {
		c.ttfb = t.firstByte.Sub(sent)
	}
	if !t.got {
		return c
	}
	span := func(start, end time.Time) time.Duration {
		if start.IsZero() || end.Before(start) {
			return 0
		}
		return end.Sub(start)
	}
	c.conn, c.wait = measure.ConnReused, span(t.getConn, t.gotConn)
	if !t.reused {
		c.conn = measure.ConnNew
		c.dns, c.connect, c.tls = span(t.dnsStart, t.dnsDone), span(t.connStart, t.connDone), span(t.tlsStart, t.tlsDone)
	}
	return c
}
