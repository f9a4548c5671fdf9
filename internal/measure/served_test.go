package measure

import (
	"strings"
	"testing"
)

// TestModelMatches: the versioned names providers answer with match the
// name asked; another model never does.
func TestModelMatches(t *testing.T) {
	for _, c := range []struct {
		asked, served string
		want          bool
	}{
		{"gpt-4o", "gpt-4o", true},
		{"GPT-4o", "gpt-4o", true},
		{"gpt-4o", "gpt-4o-2024-08-06", true},
		{"gpt-4", "gpt-4-0613", true},
		{"gpt-4o-mini", "gpt-4o-mini-2024-07-18", true},
		{"claude-3-5-sonnet", "claude-3-5-sonnet@20241022", true},
		{"claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022", true},
		{"anthropic.claude-3-5-sonnet", "anthropic.claude-3-5-sonnet-20241022-v2:0", true},
		{"gemini-1.5-pro", "gemini-1.5-pro-002", true},
		{"llama3", "llama3:latest", true},
		{"mistral-7b-instruct", "mistral-7b-instruct-v0.3", true},
		{"openai/gpt-4o", "openai/gpt-4o-2024-08-06", true},

		{"gpt-4o", "gpt-4o-mini", false},
		{"gpt-4o", "gpt-4o-mini-2024-07-18", false},
		{"llama-3-70b", "llama-3-8b", false},
		{"llama-3-70b", "llama-3-70b-instruct", false},
		{"gpt-4", "gpt-4.5", false},
		{"gpt-4", "gpt-4-32k", false},
		{"gpt-4", "gpt-4-1", false},
		{"llama3", "llama3:70b", false},
		{"gpt-4o-mini", "gpt-4o", false},
		{"gpt-4o", "", false},
		{"", "gpt-4o", false},
		{"gpt-4o", "gpt-4o-", false},
	} {
		if got := ModelMatches(c.asked, c.served); got != c.want {
			t.Errorf("ModelMatches(%q, %q) = %v, want %v", c.asked, c.served, got, c.want)
		}
	}
}

func served(names ...string) []Record {
	recs := make([]Record, len(names))
	for i, n := range names {
		recs[i] = Record{ServedModel: n, OK: n != ""}
	}
	return recs
}

func TestSummarizeServed(t *testing.T) {
	for _, c := range []struct {
		name       string
		asked      string
		deployment bool
		recs       []Record
		check      string
		models     string
		sentence   string
	}{
		{"the same", "sim-model", false, served("sim-model", "sim-model"), ServedMatch, "sim-model", "served sim-model"},
		{"a snapshot", "gpt-4o", false, served("gpt-4o-2024-08-06", "gpt-4o-2024-08-06", ""), ServedMatch, "gpt-4o-2024-08-06",
			"served gpt-4o-2024-08-06, a versioned name of gpt-4o"},
		{"two snapshots", "gpt-4o", false, served("gpt-4o-2024-08-06", "gpt-4o-2024-11-20", "gpt-4o-2024-08-06"), ServedMatch,
			"gpt-4o-2024-08-06, gpt-4o-2024-11-20", "served versioned names of gpt-4o: gpt-4o-2024-08-06 (2 of 3 answers), gpt-4o-2024-11-20 (1 of 3 answers)"},
		{"a switch", "gpt-4o", false, served("gpt-4o-mini", "gpt-4o", "gpt-4o-mini", "gpt-4o-mini"), ServedSwitch, "gpt-4o-mini, gpt-4o",
			"WARNING: the answers named another model than the one asked (gpt-4o): gpt-4o-mini (3 of 4 answers)"},
		{"another size", "llama-3-70b", false, served("llama-3-8b"), ServedSwitch, "llama-3-8b",
			"WARNING: the answers named another model than the one asked (llama-3-70b): llama-3-8b (1 of 1 answers)"},
		{"a stream naming two", "gpt-4o", false, served("gpt-4o|gpt-4o-mini"), ServedSwitch, "gpt-4o, gpt-4o-mini",
			"WARNING: the answers named another model than the one asked (gpt-4o): gpt-4o-mini (1 of 2 answers)"},
		{"a deployment", "prod-chat", true, served("gpt-4o-2024-08-06", "gpt-4o-2024-08-06"), ServedDeployment, "gpt-4o-2024-08-06",
			"served gpt-4o-2024-08-06, the model behind deployment prod-chat"},
		{"a deployment that switched", "prod-chat", true, served("gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18"), ServedSwitch,
			"gpt-4o-2024-08-06, gpt-4o-mini-2024-07-18",
			"WARNING: the answers to deployment prod-chat named more than one model: gpt-4o-2024-08-06 (1 of 2 answers), gpt-4o-mini-2024-07-18 (1 of 2 answers)"},
		{"no names", "m", false, served("", ""), ServedUnnamed, "", "the answers named no model"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := SummarizeServed(c.asked, c.deployment, c.recs)
			if s.Check != c.check || s.Names() != c.models || s.Sentence() != c.sentence {
				t.Errorf("got %s %q %q\nwant %s %q %q", s.Check, s.Names(), s.Sentence(), c.check, c.models, c.sentence)
			}
			if s.Switched() != (c.check == ServedSwitch) || strings.HasPrefix(s.Sentence(), "WARNING") != s.Switched() {
				t.Errorf("switched %v for %s", s.Switched(), s.Check)
			}
		})
	}
	if SummarizeServed("m", false, nil) != nil {
		t.Error("no records gave a summary")
	}
}

// TestSummarizeConns checks the counts, means and medians by hand: two
// new connections (set-up 30 and 10 ms, TLS only on the first) and three
// reused ones, one of each kind in the warm-up.
func TestSummarizeConns(t *testing.T) {
	recs := []Record{
		{Conn: ConnNew, Warmup: true, ConnWaitMs: 30, DNSMs: 2, ConnectMs: 8, TLSMs: 20, TTFBMs: 70},
		{Conn: ConnNew, ConnWaitMs: 10, DNSMs: 4, ConnectMs: 6, TTFBMs: 50},
		{Conn: ConnReused, Warmup: true, ConnWaitMs: 0.01, TTFBMs: 40},
		{Conn: ConnReused, TTFBMs: 44},
		{Conn: ConnReused, TTFBMs: 30},
		{ErrorClass: ErrTransport}, // no connection: not counted
	}
	c := SummarizeConns(recs)
	want := ConnStats{Requests: 5, New: 2, Reused: 3, Measured: 3, NewMeasured: 1, SetupMeanMs: 20, DNSMeanMs: 3, ConnectMeanMs: 7, TLSMeanMs: 20,
		TTFBNewP50Ms: 60, TTFBReusedP50Ms: 40}
	if *c != want {
		t.Errorf("got %+v\nwant %+v", *c, want)
	}
	if c.NotReused() {
		t.Error("3 measured requests were judged")
	}
	if SummarizeConns(recs[5:]) != nil {
		t.Error("rows without connections gave a summary")
	}
	var closing []Record
	for i := range 12 {
		closing = append(closing, Record{Conn: ConnNew, Warmup: i < 2})
	}
	if c := SummarizeConns(closing); !c.NotReused() || c.NewMeasured != 10 {
		t.Errorf("every request on a new connection: %+v, not reused %v", c, c.NotReused())
	}
	closing[5].Conn, closing[6].Conn, closing[7].Conn, closing[8].Conn, closing[9].Conn = ConnReused, ConnReused, ConnReused, ConnReused, ConnReused
	if c := SummarizeConns(closing); c.NotReused() {
		t.Errorf("half the measured requests reused theirs: %+v judged not reused", c)
	}
}
