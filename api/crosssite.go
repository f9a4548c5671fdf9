package api

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// The rules that keep a web page on another site from driving the API of a
// service on the user's own machine (docs/security.md, "Cross-site
// requests"): the Host header must name the service, a request from a
// foreign Origin is refused, and a body must be declared JSON or YAML.

// documentCSP is the Content-Security-Policy of every answer but the
// browser page and the docs page: nothing may load or run, not even in a
// report or chart opened in a browser; the inline styles of the HTML
// report and of the charts may apply.
const documentCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; " +
	"form-action 'none'; frame-ancestors 'none'; sandbox"

// hostPolicy says which values of the Host header name this service.
type hostPolicy struct {
	anyIP bool                // bound to every interface: any IP literal
	ips   map[netip.Addr]bool // the bound address
	names map[string]bool     // host names and IPs without a port, lower case
	ports map[string]bool     // host:port entries, lower case
}

// newHostPolicy builds the policy of a service bound to addr (nil when
// unknown) that also answers to hosts (allowed_hosts, the listen name).
func newHostPolicy(addr net.Addr, hosts []string) hostPolicy {
	p := hostPolicy{ips: map[netip.Addr]bool{}, names: map[string]bool{}, ports: map[string]bool{}}
	if tcp, ok := addr.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(tcp.IP); ok {
			ip = ip.Unmap()
			if ip.IsUnspecified() {
				p.anyIP = true
			}
			p.ips[ip] = true
		}
	}
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if _, _, err := net.SplitHostPort(h); err == nil {
			p.ports[h] = true
		} else if h != "" {
			p.names[strings.TrimSuffix(strings.Trim(h, "[]"), ".")] = true
		}
	}
	return p
}

// allows reports whether a Host header names the service: "localhost" or
// a loopback IP (on any port: a page that the service serves is reached
// that way), the bound IP (any IP when bound to every interface), or an
// allowed name. A name is the only way to rebind DNS, and only names the
// operator chose pass. An empty Host (HTTP/1.0) cannot come from a
// browser.
func (p hostPolicy) allows(hostport string) bool {
	if hostport == "" {
		return true
	}
	hostport = strings.ToLower(hostport)
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if ip, err := netip.ParseAddr(host); err == nil && ip.Zone() == "" {
		ip = ip.Unmap()
		return ip.IsLoopback() || p.anyIP || p.ips[ip] || p.names[ip.String()] || p.ports[hostport]
	}
	return host == "localhost" || p.names[host] || p.ports[hostport]
}

// originPolicy says which origins may call the API.
type originPolicy struct {
	trusted map[string]bool             // allowed_origins, as browsers write them
	cop     *http.CrossOriginProtection // the standard library's checks of unsafe methods
}

// newOriginPolicy trusts origins (allowed_origins). The configuration was
// validated; an entry that still does not parse is trusted nowhere, and
// returned as an error for the log.
func newOriginPolicy(origins []string) (originPolicy, error) {
	p := originPolicy{trusted: map[string]bool{}, cop: http.NewCrossOriginProtection()}
	var errs []error
	for _, o := range origins {
		o = strings.ToLower(strings.TrimSpace(o))
		if err := p.cop.AddTrustedOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("allowed origin: %w", err))
			continue
		}
		p.trusted[o] = true
	}
	return p, errors.Join(errs...)
}

// foreign reports whether a request comes from a page of another origin:
// for a request that changes something, what net/http's
// CrossOriginProtection decides from Sec-Fetch-Site and Origin; for any
// request, an Origin header that is neither the service's own (its host
// is the request's Host) nor trusted. A request without Origin or
// Sec-Fetch-Site is not a cross-site browser request.
func (p originPolicy) foreign(r *http.Request) bool {
	if p.cop.Check(r) != nil {
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	if p.trusted[strings.ToLower(origin)] {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, r.Host)
}

// bodyType is the media type a request's body is declared as, lower
// case and without parameters (media types are case-insensitive, RFC
// 9110 §8.3.1: APPLICATION/JSON is application/json), with the problem
// of a body that is not declared as one of bodyTypes in UTF-8: "" and nil
// for a request without a body. A browser can send a body cross-site
// without asking the server first only as text/plain, a form or nothing
// declared, so each of those is refused; and a body is read as UTF-8, so
// a charset other than utf-8 is refused rather than read as what it is
// not.
func bodyType(r *http.Request) (string, *huma.ErrorDetail) {
	if r.ContentLength == 0 {
		return "", nil
	}
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || !slices.Contains(bodyTypes, mt) {
		return "", &huma.ErrorDetail{Location: "header.Content-Type", Message: "must be application/json or application/yaml", Value: ct}
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return "", &huma.ErrorDetail{Location: "header.Content-Type", Message: fmt.Sprintf("the charset %q is not read: a body must be UTF-8", cs), Value: ct}
	}
	return mt, nil
}

// encoded reports whether a request's body comes compressed (gzip, br):
// this service reads bodies as sent, and a compressed one would only
// fail to parse as JSON (RFC 9110, §15.5.16: 415 for a content coding
// the server does not accept).
func encoded(r *http.Request) bool {
	if r.ContentLength == 0 {
		return false
	}
	for _, h := range r.Header.Values("Content-Encoding") {
		for _, ce := range strings.Split(h, ",") {
			if ce = strings.TrimSpace(ce); ce != "" && !strings.EqualFold(ce, "identity") {
				return true
			}
		}
	}
	return false
}

// crossSite refuses what a web page on another site could send: a Host
// that does not name the service (DNS rebinding), a foreign Origin, and
// a body not declared as JSON or YAML (which a page can send without the
// browser asking the server first); and a body in a content coding.
//
// A body that passes is read as the media type it is declared as, which
// the request then carries in lower case and without parameters: the one
// spelling of it that huma's formats are looked up by.
func (s *Server) crossSite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mt, undeclared := bodyType(r)
		switch {
		case !s.hosts.allows(r.Host):
			writeProblem(w, http.StatusForbidden, "the Host header does not name this service; a name that reaches it through a proxy must be listed in allowed_hosts",
				&huma.ErrorDetail{Location: "header.Host", Message: "not a name of this service", Value: r.Host})
		case s.origins.foreign(r):
			writeProblem(w, http.StatusForbidden, "a page of another origin may not call this API; an origin that should must be listed in allowed_origins",
				&huma.ErrorDetail{Location: "header.Origin", Message: "not this service's origin nor an allowed one", Value: r.Header.Get("Origin")})
		case undeclared != nil:
			writeProblem(w, http.StatusUnsupportedMediaType, "a request body must be declared as application/json or application/yaml, in UTF-8", undeclared)
		case encoded(r):
			writeProblem(w, http.StatusUnsupportedMediaType, "a request body must be sent as it is, without a Content-Encoding",
				&huma.ErrorDetail{Location: "header.Content-Encoding", Message: "must be absent or identity", Value: strings.Join(r.Header.Values("Content-Encoding"), ", ")})
		default:
			if mt != "" && r.Header.Get("Content-Type") != mt {
				r = r.WithContext(r.Context())
				r.Header = r.Header.Clone()
				r.Header.Set("Content-Type", mt)
			}
			next.ServeHTTP(w, r)
		}
	})
}

// secureHeaders sets the headers every answer carries: nosniff, so that a
// browser never reads an answer as another type than it says, and, on
// everything but the browser page and the docs page (which have their own
// policies), the strict documentCSP.
func (s *Server) secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		if op := s.label(r); op != "ui" && op != "docs" {
			h.Set("Content-Security-Policy", documentCSP)
		}
		next.ServeHTTP(w, r)
	})
}
