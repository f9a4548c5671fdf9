package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/target"
)

// keyHeader is the request header that may carry a probe's API key: the
// whole value of the Authorization header to send ("Bearer sk-...").
const keyHeader = "X-Probe-Authorization"

// ProbeTarget is the endpoint a probe or a validation measures.
type ProbeTarget struct {
	BaseURL    string `json:"base_url" minLength:"1" maxLength:"2048" doc:"API root: requests go to base_url/chat/completions, after GET base_url/models has answered without a redirect. http or https without user information or a fragment; the host, its port and every address it resolves to must pass the server's probe allow-list (default: loopback only)." example:"http://127.0.0.1:8000/v1"`
	Model      string `json:"model" minLength:"1" maxLength:"256" doc:"Model (or Azure deployment) name sent in each request." example:"sim-model"`
	Credential string `json:"credential,omitempty" maxLength:"64" doc:"Name of a credential of the server's configuration (probe.credentials): its key is read from the server's environment when the probe starts. Or send the key in the X-Probe-Authorization header. Without either, no key is sent."`
}

// withProbeDefaults fills the zero fields of a probe section.
func withProbeDefaults(p config.Probe) config.Probe {
	d := config.DefaultProbe()
	if p.Allow == nil {
		p.Allow = d.Allow
	}
	if p.MaxConcurrency <= 0 {
		p.MaxConcurrency = d.MaxConcurrency
	}
	if p.MaxRequests <= 0 {
		p.MaxRequests = d.MaxRequests
	}
	if p.MaxTokens <= 0 {
		p.MaxTokens = d.MaxTokens
	}
	if p.MaxDuration <= 0 {
		p.MaxDuration = d.MaxDuration
	}
	if p.MaxRunning <= 0 {
		p.MaxRunning = d.MaxRunning
	}
	return p
}

// newGuard builds the target guard of the configured allow-list. The
// configuration was validated; an entry that still does not parse allows
// nothing, and is logged.
func (s *Server) newGuard(n target.Network) *target.Guard {
	rules, err := target.ParseRules(s.probe.Allow)
	if err != nil {
		s.log.Error("probe allow-list", "error", err)
	}
	return target.NewGuard(rules, n)
}

// key is the API key a probe sends and where it came from.
type key struct {
	value    string
	header   string // probe.Config.APIKeyHeader
	asIs     bool   // value is the whole header value
	location string // where a refusal of the key is located
}

// headers are the key as request headers, for the preflight.
func (k key) headers() http.Header {
	h := http.Header{}
	switch {
	case k.value == "":
	case k.asIs:
		h.Set(k.header, k.value)
	case k.header == probe.DefaultAPIKeyHeader:
		h.Set(k.header, "Bearer "+k.value)
	default:
		h.Set(k.header, k.value)
	}
	return h
}

// apply puts the key into a probe configuration.
func (k key) apply(cfg *probe.Config) {
	cfg.APIKey, cfg.APIKeyHeader, cfg.APIKeyAsIs = k.value, k.header, k.asIs
}

// probeKey finds the key of a probe: a named credential (read from the
// environment now) or the X-Probe-Authorization header, not both. Its
// problems never carry the key.
func (s *Server) probeKey(credential, header, at string) (key, []error) {
	header = strings.TrimSpace(header)
	switch {
	case credential != "" && header != "":
		return key{}, []error{&huma.ErrorDetail{Location: at + ".credential", Message: "give a credential or the " + keyHeader + " header, not both"}}
	case header != "":
		if strings.ContainsFunc(header, func(r rune) bool { return r < ' ' || r > '~' }) || len(header) > 4096 {
			return key{}, []error{&huma.ErrorDetail{Location: "header." + keyHeader, Message: "must be a header value of printable ASCII, at most 4096 bytes, such as \"Bearer sk-...\""}}
		}
		return key{value: header, header: probe.DefaultAPIKeyHeader, asIs: true, location: "header." + keyHeader}, nil
	case credential != "":
		for _, c := range s.probe.Credentials {
			if c.Name != credential {
				continue
			}
			v := strings.TrimSpace(os.Getenv(c.Env))
			if v == "" {
				return key{}, []error{&huma.ErrorDetail{Location: at + ".credential", Value: credential,
					Message: fmt.Sprintf("the server's environment variable %s of credential %q is empty or unset", c.Env, credential)}}
			}
			return key{value: v, header: c.Header, location: at + ".credential"}, nil
		}
		names := make([]string, 0, len(s.probe.Credentials))
		for _, c := range s.probe.Credentials {
			names = append(names, c.Name)
		}
		list := "the server has none"
		if len(names) > 0 {
			list = "the server has: " + strings.Join(names, ", ")
		}
		return key{}, []error{&huma.ErrorDetail{Location: at + ".credential", Value: credential, Message: "no credential has this name (" + list + ")"}}
	}
	return key{header: probe.DefaultAPIKeyHeader}, nil
}

// checkTarget refuses, before any request leaves, a base URL that the
// allow-list does not allow (host, port and every resolved address), then
// tries it with GET base_url/models without following redirects. On
// success it returns the hooks that make the probe's own connections pass
// the same checks.
func (s *Server) checkTarget(ctx context.Context, baseURL string, k key, at string) (target.Target, error) {
	t, err := s.guard.Check(ctx, baseURL)
	if err == nil {
		err = s.guard.Preflight(ctx, t, k.headers())
	}
	if err == nil {
		return t, nil
	}
	msg := target.Redact(err.Error(), k.headers())
	s.log.LogAttrs(ctx, slog.LevelInfo, "probe target refused", slog.String("reason", msg))
	loc := at + ".base_url"
	if errors.Is(err, target.ErrUnauthorized) {
		loc = k.location
		if loc == "" {
			loc = at + ".credential"
			msg += "; the endpoint wants a key: name a credential or send " + keyHeader
		}
	}
	return t, huma.Error422UnprocessableEntity("the probe target is refused", &huma.ErrorDetail{Location: loc, Message: msg})
}

// guarded makes a probe's connections go through the guard: every
// connection's addresses are checked again, and redirects are refused.
func (s *Server) guarded(cfg *probe.Config) {
	cfg.DialContext = s.guard.DialContext
	cfg.CheckRedirect = target.RefuseRedirect
}

// Budgets bound one probe's spend; each defaults to, and may not pass,
// the server's cap. Their bounds come from package probe (bounds.go).
type Budgets struct {
	MaxRequests  int     `json:"max_requests,omitempty" minimum:"1"`
	MaxTokens    int     `json:"max_tokens,omitempty" minimum:"1"`
	MaxDurationS float64 `json:"max_duration_s,omitempty" exclusiveMinimum:"0"`
}

// budget is the budget the request asks for; nil asks for none, so that
// the caps apply.
func (b *Budgets) budget() probe.Budget {
	if b == nil {
		return probe.Budget{}
	}
	out := probe.Budget{MaxRequests: given(b.MaxRequests), MaxTokens: given(b.MaxTokens)}
	if b.MaxDurationS != 0 {
		// Bounded before it becomes a duration: the schema refuses more
		// than probe.MaxBudgetDuration, and the caps name the limit.
		s := min(b.MaxDurationS, 2*probe.MaxBudgetDuration.Seconds())
		out.MaxDuration = optional.Of(time.Duration(s * float64(time.Second)))
	}
	return out
}

// given is a body field's value, unset when the body leaves it out: such
// a field decodes as 0, which its schema refuses when it is given.
func given[T int | float64](v T) optional.Value[T] {
	if v == 0 {
		return optional.Value[T]{}
	}
	return optional.Of(v)
}

// givenMs is a body field of milliseconds, unset when left out.
func givenMs(ms int) optional.Value[time.Duration] {
	if ms == 0 {
		return optional.Value[time.Duration]{}
	}
	return optional.Of(time.Duration(ms) * time.Millisecond)
}

// capsKey keys an operation's probe caps in its metadata, for its
// resolver.
const capsKey = "probe_caps"

// caps are the server's caps on one probe or validation, whose duration
// is at most durationCap.
func (s *Server) caps(durationCap time.Duration) probe.Caps {
	c := probe.Caps{MaxConcurrency: s.probe.MaxConcurrency, MaxRequests: s.probe.MaxRequests, MaxTokens: s.probe.MaxTokens, MaxDuration: durationCap}
	if durationCap != s.probe.MaxDuration {
		c.DurationSetting = "the bound of a synchronous validation"
	}
	return c
}

// operationCaps are the caps that an operation was registered with.
func operationCaps(ctx huma.Context) probe.Caps {
	c, _ := ctx.Operation().Metadata[capsKey].(probe.Caps)
	return c
}

// bodyRules locates a configuration's problems in a request body. A
// problem with a base URL does not echo it: its user information, query
// or fragment may hold a credential.
func bodyRules(names fieldpath.Names, errs []fieldpath.Error) []rule {
	rules := make([]rule, 0, len(errs))
	for _, e := range errs {
		loc := names.Of(e.Path)
		rules = append(rules, rule{location: loc, message: e.Message, hide: strings.HasSuffix(loc, "base_url")})
	}
	return rules
}

// probeBusy describes the 429 of busyProblem.
const probeBusy = "probe.max_running probes and validations are already running: nothing was sent, not even the " +
	"preflight; Retry-After says when to try again."

// busyProblem is the 429 of a start refused because max_running probes
// run, with a Retry-After.
func busyProblem(limit int) error {
	return huma.ErrorWithHeaders(
		huma.Error429TooManyRequests(fmt.Sprintf("%d probes are already running, the server's limit probe.max_running; try again when one has finished", limit)),
		http.Header{"Retry-After": {"10"}})
}
