package builtin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// guard keeps http_get away from addresses that reach into the network this
// server runs in: cloud metadata (169.254.169.254), localhost admin ports,
// the private LAN. The model picks the URL, and a prompt can pick it for the
// model, so the guard is not optional.
//
// The check runs in the dialer's Control hook, on the IP address the socket
// is about to connect to: after DNS resolution, for every address tried, on
// every redirect and every new connection. A hostname that resolves (or
// re-resolves, DNS rebinding) to a private address is therefore refused,
// which a check of the URL alone could not promise.
type guard struct {
	hosts map[string]bool // exempt hostnames, lower case
	nets  []netip.Prefix  // exempt address ranges
}

// newGuard parses allow-list entries: an IP ("127.0.0.1"), a CIDR
// ("10.1.0.0/16") or a hostname ("intranet.example.com"). A hostname is
// exempt by name, whatever it resolves to; the operator vouches for it.
func newGuard(allow []string) (*guard, error) {
	g := &guard{hosts: make(map[string]bool)}
	for _, entry := range allow {
		host, prefix, err := parseAllow(entry)
		switch {
		case err != nil:
			return nil, fmt.Errorf("builtin tools: HTTPGet.Allow %w", err)
		case host != "":
			g.hosts[host] = true
		case prefix.IsValid():
			g.nets = append(g.nets, prefix)
		}
	}
	return g, nil
}

// CheckAllow reports whether entry is an HTTPGetConfig.Allow entry the
// guard accepts, with an error that quotes it when not, so the setting can
// be checked where it is read.
func CheckAllow(entry string) error {
	_, _, err := parseAllow(entry)
	return err
}

// parseAllow reads one allow-list entry: an exempt hostname (lower case, no
// trailing dot) or an exempt address range. A blank entry is neither.
func parseAllow(entry string) (host string, prefix netip.Prefix, err error) {
	e := strings.TrimSpace(entry)
	switch {
	case e == "":
		return "", netip.Prefix{}, nil
	case strings.Contains(e, "/"):
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return "", netip.Prefix{}, fmt.Errorf("entry %q: %w", entry, err)
		}
		return "", p.Masked(), nil
	}
	if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
		return "", netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
	}
	if strings.ContainsAny(e, ":@ ") {
		return "", netip.Prefix{}, fmt.Errorf("entry %q is not a host, IP or CIDR", entry)
	}
	return strings.ToLower(strings.TrimSuffix(e, ".")), netip.Prefix{}, nil
}

// blockedError is the refusal, recognisable through the net and url error
// wrappers so http_get can explain it plainly.
type blockedError struct {
	addr   netip.Addr
	reason string
}

func (e *blockedError) Error() string {
	return fmt.Sprintf("destination %s is not allowed (%s address)", e.addr, e.reason)
}

// special lists ranges the standard library's predicates do not cover.
var special = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // includes 255.255.255.255
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
}

// Prefixes that embed an IPv4 address: the embedded one is checked too,
// else 64:ff9b::7f00:1 would be a way to say 127.0.0.1.
var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// check returns nil if addr may be dialled.
func (g *guard) check(addr netip.Addr) error {
	addr = addr.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	for _, p := range g.nets {
		if p.Contains(addr) {
			return nil
		}
	}
	if reason := blockedReason(addr); reason != "" {
		return &blockedError{addr: addr, reason: reason}
	}
	return nil
}

func blockedReason(addr netip.Addr) string {
	switch {
	case addr.IsLoopback():
		return "loopback"
	case addr.IsUnspecified():
		return "unspecified"
	case addr.IsPrivate():
		if addr.Is6() {
			return "unique-local"
		}
		return "private"
	case addr.IsLinkLocalUnicast():
		return "link-local"
	case addr.IsMulticast(), addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, s := range special {
		if s.prefix.Contains(addr) {
			return s.reason
		}
	}
	if nat64.Contains(addr) {
		b := addr.As16()
		if r := blockedReason(netip.AddrFrom4([4]byte(b[12:16]))); r != "" {
			return r + " (NAT64)"
		}
	}
	if sixTo4.Contains(addr) {
		b := addr.As16()
		if r := blockedReason(netip.AddrFrom4([4]byte(b[2:6]))); r != "" {
			return r + " (6to4)"
		}
	}
	return ""
}

// dialContext dials through base with the guard in its Control hook,
// unless the host is exempt by name.
func (g *guard) dialContext(base *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := *base
		if !g.hosts[strings.ToLower(strings.TrimSuffix(host, "."))] {
			d.Control = func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return fmt.Errorf("unexpected dial address %q: %w", address, err)
				}
				return g.check(ap.Addr())
			}
		}
		return d.DialContext(ctx, network, addr)
	}
}

// asBlocked finds a guard refusal inside err.
func asBlocked(err error) (*blockedError, bool) {
	var b *blockedError
	ok := errors.As(err, &b)
	return b, ok
}
