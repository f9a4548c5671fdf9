package probe

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/measure"
)

// serve serves h on loopback, over TLS when asked, and returns the
// server.
func serve(t *testing.T, h http.Handler, overTLS bool) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	if overTLS {
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	return ts
}

// simHandler is a simulator whose answers take about 8 ms: long enough
// that the two slots of a step at concurrency 2 overlap, and each needs a
// connection of its own.
func simHandler(t *testing.T) http.Handler {
	t.Helper()
	cfg := fastSim
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	srv, err := fakeendpoint.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestConnectionsAreReused: against an endpoint that keeps connections
// alive, a ladder of 1 and 2 opens at most one connection per slot, in its
// step's warm-up, and every other request reuses one; over TLS, each new
// connection reports its connect and TLS phases, and a reused one none.
func TestConnectionsAreReused(t *testing.T) {
	for _, overTLS := range []bool{false, true} {
		name := map[bool]string{false: "http", true: "https"}[overTLS]
		t.Run(name, func(t *testing.T) {
			ts := serve(t, simHandler(t), overTLS)
			cfg := quick(ts.URL + "/v1")
			cfg.Steps = []int{1, 2}
			if overTLS {
				roots := x509.NewCertPool()
				roots.AddCert(ts.Certificate())
				cfg.tlsConfig = &tls.Config{RootCAs: roots}
			}
			res := run(t, t.Context(), cfg, nil)
			if res.Failure() != nil {
				t.Fatal(res.Failure())
			}
			// The second slot's connection is new unless a connection came
			// free before its set-up ended: the transport then hands that one
			// over and pools the new one, whose first request counts it reused.
			for _, c := range []int{1, 2} {
				st := stepAt(t, res, c).Connections
				if st == nil || st.New > 1 || st.New+st.Reused != st.Requests || st.Requests != len(recordsAt(res, c)) || st.NotReused() {
					t.Errorf("step %d: %+v", c, st)
				}
			}
			if st := stepAt(t, res, 1).Connections; st.New != 1 {
				t.Errorf("the first request did not open the first connection: %+v", st)
			}
			all := res.Analysis.Connections
			if all == nil || all.New > 2 || all.Requests != len(res.Records) || all.TTFBReusedP50Ms <= 0 || all.ConnectMeanMs <= 0 || all.SetupMeanMs <= 0 {
				t.Errorf("run: %+v", all)
			}
			for _, rec := range res.Records {
				switch {
				case rec.Conn == measure.ConnNew && (rec.ConnectMs <= 0 || overTLS != (rec.TLSMs > 0) || rec.TTFBMs <= 0):
					t.Errorf("a new connection without its phases: %+v", rec)
				case rec.Conn == measure.ConnReused && (rec.ConnectMs != 0 || rec.TLSMs != 0 || rec.DNSMs != 0 || rec.TTFBMs <= 0):
					t.Errorf("a reused connection with set-up phases: %+v", rec)
				case rec.Conn == "":
					t.Errorf("a row without its connection: %+v", rec)
				}
			}
			if overTLS != (all.TLSMeanMs > 0) {
				t.Errorf("TLS mean %v over %s", all.TLSMeanMs, name)
			}
			for _, w := range res.Warnings() {
				if strings.Contains(w, "connections were not reused") {
					t.Errorf("warned: %s", w)
				}
			}
		})
	}
}

// closing answers every request with Connection: close, as a proxy that
// does not keep connections alive does.
type closing struct{ next http.Handler }

func (c closing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	c.next.ServeHTTP(w, r)
}

// TestConnectionsNotReusedAreWarnedOf: when the endpoint closes every
// connection, every request opens one, and the probe warns, naming the
// step and the count.
func TestConnectionsNotReusedAreWarnedOf(t *testing.T) {
	for _, overTLS := range []bool{false, true} {
		ts := serve(t, closing{simHandler(t)}, overTLS)
		cfg := quick(ts.URL + "/v1")
		cfg.Steps = []int{1}
		if overTLS {
			roots := x509.NewCertPool()
			roots.AddCert(ts.Certificate())
			cfg.tlsConfig = &tls.Config{RootCAs: roots}
		}
		res := run(t, t.Context(), cfg, nil)
		st := stepAt(t, res, 1).Connections
		if st == nil || st.New != len(res.Records) || st.Reused != 0 || st.NewMeasured != 40 || !st.NotReused() {
			t.Fatalf("tls %v: %+v over %d rows", overTLS, st, len(res.Records))
		}
		w := res.Warnings()
		if len(w) != 1 || !strings.Contains(w[0], "connections were not reused") || !strings.Contains(w[0], "at concurrency 1 (40 of 40)") ||
			!slices.Contains(res.Analysis.Notes, w[0]) {
			t.Errorf("tls %v: warnings %q", overTLS, w)
		}
		if overTLS && st.TLSMeanMs <= 0 {
			t.Errorf("TLS set-up not measured: %+v", st)
		}
	}
}

// recordsAt are the rows of the step at concurrency c.
func recordsAt(res *Result, c int) []measure.Record {
	var out []measure.Record
	for _, r := range res.Records {
		if r.Step == c {
			out = append(out, r)
		}
	}
	return out
}
