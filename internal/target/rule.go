// Package target decides where the service's probes may send requests
// (docs/security.md): an allow-list of address and name entries, a check of
// a base URL and of every address its host resolves to, a dialer that
// repeats the check for every connection it opens, a redirect policy that
// refuses them all, and a preflight request that tries the target before a
// probe starts.
//
// The rule: an address entry (loopback, an IP, a CIDR) allows the addresses
// it covers, on its port. A name entry (host:port with * for one label or
// for the port) allows the name, but a name is only a way to reach its
// addresses: every address the name resolves to must be allowed by an
// address entry, or be a public unicast address when the name matched a
// name entry. A name entry never opens a loopback, private, link-local or
// other special-purpose address, so a name that resolves (or is re-bound)
// to one is refused unless an address entry allows that address too.
package target

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Loopback is the allow-list entry that allows every loopback address
// (127.0.0.0/8 and ::1) on every port, and the names that resolve to them;
// it is the default allow-list.
const Loopback = "loopback"

// ruleKind says what a Rule matches.
type ruleKind int

const (
	kindLoopback ruleKind = iota
	kindPrefix
	kindName
)

// Rule is one parsed entry of the allow-list.
type Rule struct {
	text   string
	kind   ruleKind
	prefix netip.Prefix // kindPrefix
	labels []string     // kindName: lower case, "*" matches one label
	port   int          // 0: any port
}

// String is the entry as written in the configuration.
func (r Rule) String() string { return r.text }

// ParseRule parses one allow-list entry: "loopback"; "HOST:PORT" where HOST
// is a DNS name whose labels may be "*" (one label) and PORT is a number or
// "*"; "IP:PORT" ("[IPv6]:PORT"); or "CIDR:PORT" ("10.20.0.0/16:*",
// "[fd00::/8]:443").
func ParseRule(entry string) (Rule, error) {
	s := strings.TrimSpace(entry)
	if strings.EqualFold(s, Loopback) {
		return Rule{text: Loopback, kind: kindLoopback}, nil
	}
	host, port, err := splitEntry(s)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{text: s}
	if port != "*" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return Rule{}, fmt.Errorf("port %q must be a number from 1 to 65535, or * for any port", port)
		}
		r.port = n
	}
	switch {
	case strings.Contains(host, "/"):
		p, err := netip.ParsePrefix(host)
		if err != nil {
			return Rule{}, fmt.Errorf("%q is not a CIDR block such as 10.20.0.0/16", host)
		}
		r.kind, r.prefix = kindPrefix, canonicalPrefix(p)
	case isAddr(host):
		a, err := netip.ParseAddr(host)
		if err != nil || a.Zone() != "" {
			return Rule{}, fmt.Errorf("%q is not an IP address without a zone", host)
		}
		a = a.Unmap()
		r.kind, r.prefix = kindPrefix, netip.PrefixFrom(a, a.BitLen())
	default:
		labels, err := nameLabels(host, true)
		if err != nil {
			return Rule{}, err
		}
		r.kind, r.labels = kindName, labels
	}
	return r, nil
}

// ParseRules parses every entry; the error names each bad one by its index.
func ParseRules(entries []string) ([]Rule, error) {
	rules := make([]Rule, 0, len(entries))
	var errs []error
	for i, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("allow[%d] %q: %w", i, e, err))
			continue
		}
		rules = append(rules, r)
	}
	return rules, errors.Join(errs...)
}

// splitEntry splits "host:port" and "[v6 or v6/n]:port".
func splitEntry(s string) (host, port string, err error) {
	const form = "must be loopback, host:port, ip:port or cidr:port (port may be *), for example vllm.internal:8000 or 10.20.0.0/16:*"
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 || !strings.HasPrefix(s[end+1:], ":") {
			return "", "", errors.New(form)
		}
		host, port = s[1:end], s[end+2:]
	} else {
		i := strings.LastIndex(s, ":")
		if i < 0 || strings.Count(s, ":") > 1 {
			return "", "", errors.New(form)
		}
		host, port = s[:i], s[i+1:]
	}
	if host == "" || port == "" {
		return "", "", errors.New(form)
	}
	return host, port, nil
}

// isAddr reports whether host is written as an IP address rather than a
// name: it holds a colon, or only digits and dots.
func isAddr(host string) bool {
	return strings.Contains(host, ":") || strings.Trim(host, "0123456789.") == ""
}

// canonicalPrefix unmaps IPv4-mapped IPv6 prefixes and clears host bits.
func canonicalPrefix(p netip.Prefix) netip.Prefix {
	a := p.Addr()
	if a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// nameLabels splits a host name into lower-case labels, checking each; a
// pattern may use "*" for a whole label.
func nameLabels(host string, pattern bool) ([]string, error) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" || len(host) > 253 {
		return nil, fmt.Errorf("%q is not a host name", host)
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if pattern && l == "*" {
			continue
		}
		if !validLabel(l) {
			return nil, fmt.Errorf("%q is not a host name: label %q must be 1 to 63 letters, digits, hyphens or underscores, not starting or ending with a hyphen", host, l)
		}
	}
	return labels, nil
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for _, c := range l {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
		if !ok {
			return false
		}
	}
	return true
}

// allowsAddr reports whether an address entry allows addr on port.
func (r Rule) allowsAddr(addr netip.Addr, port int) bool {
	if r.port != 0 && r.port != port {
		return false
	}
	switch r.kind {
	case kindLoopback:
		return addr.IsLoopback()
	case kindPrefix:
		return r.prefix.Contains(addr)
	}
	return false
}

// allowsName reports whether a name entry matches the host name on port.
func (r Rule) allowsName(labels []string, port int) bool {
	if r.kind != kindName || (r.port != 0 && r.port != port) || len(labels) != len(r.labels) {
		return false
	}
	for i, l := range r.labels {
		if l != "*" && l != labels[i] {
			return false
		}
	}
	return true
}

// special are the address blocks that are not public unicast addresses
// besides those netip classifies (loopback, private, link-local,
// multicast, unspecified): shared address space, benchmarking and
// documentation blocks, reserved space, and the IPv6 blocks that embed or
// translate IPv4 addresses (and could reach a private one).
var special = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
		"64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2002::/16",
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// Public reports whether addr is a public unicast address: not loopback,
// private, link-local, multicast, unspecified, nor in another
// special-purpose block.
func Public(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.IsGlobalUnicast() || addr.IsPrivate() {
		return false
	}
	for _, p := range special {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}
