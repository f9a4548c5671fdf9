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
// is under mu and only the connection the attempt got is reported. A
// trace is reused for a later attempt only once settled.
type connTrace struct {
	mu                  sync.Mutex
	getConn, gotConn    time.Time
	got, reused         bool
	dnsStart, dnsDone   time.Time
	connStart, connDone time.Time
	tlsStart, tlsDone   time.Time
	firstByte           time.Time
	// gets counts the connections asked for, idleGets those taken from
	// the idle pool (no dial was started for them), wrote the requests
	// written.
	gets, idleGets, wrote int
}

// connTiming is what connTrace measured of one attempt, from its send.
type connTiming struct {
	conn                    string // measure.ConnNew, measure.ConnReused, or "" without a connection
	wait, dns, connect, tls time.Duration
	ttfb                    time.Duration // 0 without an answer
}

// reset clears the trace for a new attempt.
func (t *connTrace) reset() {
	t.mu.Lock()
	t.getConn, t.gotConn, t.got, t.reused = time.Time{}, time.Time{}, false, false
	t.dnsStart, t.dnsDone, t.connStart, t.connDone = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	t.tlsStart, t.tlsDone, t.firstByte = time.Time{}, time.Time{}, time.Time{}
	t.gets, t.idleGets, t.wrote = 0, 0, 0
	t.mu.Unlock()
}

// settled reports whether the transport is done with what the trace saw:
// every connection asked for came from the idle pool, so that no dial
// started for it can report later, and every request was written.
func (t *connTrace) settled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gets > 0 && t.idleGets == t.gets && t.wrote == t.gets
}

// hooks returns the trace that fills t. Each phase runs from its first
// start to its last end: a dial that tries several addresses reports each.
func (t *connTrace) hooks() *httptrace.ClientTrace {
	first := func(p *time.Time) {
		now := time.Now()
		t.mu.Lock()
		if p.IsZero() {
			*p = now
		}
		t.mu.Unlock()
	}
	last := func(p *time.Time) {
		now := time.Now()
		t.mu.Lock()
		*p = now
		t.mu.Unlock()
	}
	return &httptrace.ClientTrace{
		GetConn: func(string) {
			now := time.Now()
			t.mu.Lock()
			if t.getConn.IsZero() {
				t.getConn = now
			}
			t.gets++
			t.mu.Unlock()
		},
		GotConn: func(info httptrace.GotConnInfo) {
			now := time.Now()
			t.mu.Lock()
			t.gotConn, t.got, t.reused = now, true, info.Reused
			if info.WasIdle {
				t.idleGets++
			}
			t.mu.Unlock()
		},
		DNSStart:          func(httptrace.DNSStartInfo) { first(&t.dnsStart) },
		DNSDone:           func(httptrace.DNSDoneInfo) { last(&t.dnsDone) },
		ConnectStart:      func(string, string) { first(&t.connStart) },
		ConnectDone:       func(string, string, error) { last(&t.connDone) },
		TLSHandshakeStart: func() { first(&t.tlsStart) },
		TLSHandshakeDone:  func(tls.ConnectionState, error) { last(&t.tlsDone) },
		WroteRequest: func(httptrace.WroteRequestInfo) {
			t.mu.Lock()
			t.wrote++
			t.mu.Unlock()
		},
		GotFirstResponseByte: func() { first(&t.firstByte) },
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
