package target

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Errors a check returns, wrapped with the reason in words.
var (
	// ErrForbidden means that the allow-list does not allow the target or
	// one of its addresses.
	ErrForbidden = errors.New("not allowed")
	// ErrBadURL means that the base URL is not an http or https URL with a
	// host and without user information.
	ErrBadURL = errors.New("invalid base URL")
	// ErrUnresolvable means that the host name has no address.
	ErrUnresolvable = errors.New("cannot resolve")
	// ErrRedirect means that the target answered with a redirect, which a
	// probe never follows.
	ErrRedirect = errors.New("redirect refused")
	// ErrUnreachable means that no connection to the target could be made.
	ErrUnreachable = errors.New("unreachable")
	// ErrUnauthorized means that the target refused the credentials (401
	// or 403).
	ErrUnauthorized = errors.New("credentials refused")
)

// Resolver resolves a host name to its addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens a connection to an address; *net.Dialer is one.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Network is how a Guard reaches targets; zero fields select the system's
// resolver and a plain dialer. Tests map names to any address with their
// own Resolver, and watch connections with their own Dialer.
type Network struct {
	Resolver Resolver
	Dialer   Dialer
}

// resolveTimeout bounds one name resolution.
const resolveTimeout = 5 * time.Second

// Guard checks targets against an allow-list, for the base URL of a probe
// and again for every connection the probe opens.
type Guard struct {
	rules    []Rule
	resolver Resolver
	dialer   Dialer
}

// NewGuard returns a guard over rules.
func NewGuard(rules []Rule, n Network) *Guard {
	g := &Guard{rules: rules, resolver: n.Resolver, dialer: n.Dialer}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	if g.dialer == nil {
		g.dialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	}
	return g
}

// Rules returns the allow-list as written, for messages.
func (g *Guard) Rules() []string {
	out := make([]string, len(g.rules))
	for i, r := range g.rules {
		out[i] = r.String()
	}
	return out
}

// Target is a checked base URL: its host, port and the addresses it
// resolved to when it was checked.
type Target struct {
	URL   *url.URL
	Host  string
	Port  int
	Addrs []netip.Addr
}

// Check parses a probe's base URL (http or https, a host, no user
// information) and checks its host and port and every address the host
// resolves to against the allow-list. It sends nothing to the target.
func (g *Guard) Check(ctx context.Context, baseURL string) (Target, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return Target{}, fmt.Errorf("%w: it does not parse as a URL", ErrBadURL)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return Target{}, fmt.Errorf("%w: the scheme must be http or https", ErrBadURL)
	}
	if u.User != nil {
		return Target{}, fmt.Errorf("%w: user information in the URL is not allowed (give a credential instead)", ErrBadURL)
	}
	if u.Hostname() == "" {
		return Target{}, fmt.Errorf("%w: no host", ErrBadURL)
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Target{}, fmt.Errorf("%w: port %q is not from 1 to 65535", ErrBadURL, p)
		}
		port = n
	}
	addrs, err := g.allowed(ctx, u.Hostname(), port)
	if err != nil {
		return Target{}, err
	}
	return Target{URL: u, Host: u.Hostname(), Port: port, Addrs: addrs}, nil
}

// allowed resolves host (a name or an address literal) and returns its
// addresses when the allow-list allows every one of them on port.
func (g *Guard) allowed(ctx context.Context, host string, port int) ([]netip.Addr, error) {
	where := net.JoinHostPort(host, strconv.Itoa(port))
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return nil, fmt.Errorf("%w: %s: an address with a zone", ErrForbidden, where)
		}
		a = a.Unmap()
		if !g.addrAllowed(a, port) {
			return nil, fmt.Errorf("%w: %s is not in the probe allow-list (%s)", ErrForbidden, where, strings.Join(g.Rules(), ", "))
		}
		return []netip.Addr{a}, nil
	}
	labels, err := nameLabels(host, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	named := false
	for _, r := range g.rules {
		if r.allowsName(labels, port) {
			named = true
			break
		}
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnresolvable, host, cmpErr(err, "no addresses"))
	}
	for i, a := range addrs {
		a = a.Unmap()
		addrs[i] = a
		switch {
		case g.addrAllowed(a, port):
		case named && Public(a):
		case named:
			return nil, fmt.Errorf("%w: %s resolves to %s, which is not a public address, and no address entry of the probe allow-list (%s) allows it", ErrForbidden, where, a, strings.Join(g.Rules(), ", "))
		default:
			return nil, fmt.Errorf("%w: %s resolves to %s, and neither the name nor that address is in the probe allow-list (%s)", ErrForbidden, where, a, strings.Join(g.Rules(), ", "))
		}
	}
	return addrs, nil
}

func cmpErr(err error, alt string) string {
	if err != nil {
		return err.Error()
	}
	return alt
}

func (g *Guard) addrAllowed(a netip.Addr, port int) bool {
	for _, r := range g.rules {
		if r.allowsAddr(a, port) {
			return true
		}
	}
	return false
}

// DialContext opens a connection to address (host:port) after checking
// the host and every address it resolves to now, so that a name re-bound
// to a forbidden address since the base URL was checked is refused. It
// connects only to the checked addresses, never resolving twice.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("dial %s: bad port: %w", address, err)
	}
	addrs, err := g.allowed(ctx, host, port)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	var errs []error
	for _, a := range addrs {
		conn, err := g.dialer.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("dial %s: %w", address, errors.Join(errs...))
}

// RedirectError is the error of a refused redirect; it names where the
// redirect pointed, without the query.
type RedirectError struct {
	Status int
	To     string
}

// Error says what the target answered and where it pointed.
func (e *RedirectError) Error() string {
	if e.To == "" {
		return fmt.Sprintf("the target answered %d, a redirect; redirects are refused", e.Status)
	}
	return fmt.Sprintf("the target answered %d, a redirect to %s; redirects are refused", e.Status, e.To)
}

// Unwrap makes a RedirectError match ErrRedirect.
func (e *RedirectError) Unwrap() error { return ErrRedirect }

// RefuseRedirect is an http.Client CheckRedirect that refuses every
// redirect, so that a target cannot send a probe (and its key) elsewhere.
func RefuseRedirect(req *http.Request, _ []*http.Request) error {
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	return &RedirectError{Status: status, To: Display(req.URL)}
}

// Display is a URL without user information, query or fragment, for
// messages: what a query might carry (a signature, a key) stays out.
func Display(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}
