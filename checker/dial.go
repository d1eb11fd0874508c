package checker

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Dialer opens network connections. *net.Dialer satisfies it; a simulated network may
// replace it. The checker always dials an IP address and port that it has resolved and
// checked itself, never a host name.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Resolver resolves host names to addresses. *net.Resolver satisfies it. network is "ip4" or
// "ip6".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// defaultDialer returns the net.Dialer the checker uses when none is injected: no TCP
// keep-alive (a probe's connection lives for one exchange) and the address policy applied in
// Control, to the address the kernel is about to connect to.
func defaultDialer(g *guard) *net.Dialer {
	return &net.Dialer{KeepAlive: -1, Control: g.control}
}

// phaseError records in which phase of a probe an error happened, so that it can be
// classified (an EOF means one thing in a TLS handshake and another in a response).
type phaseError struct {
	phase string
	err   error
}

func (e *phaseError) Error() string { return e.phase + ": " + e.err.Error() }
func (e *phaseError) Unwrap() error { return e.err }

// The phases of a probe.
const (
	phaseDNS     = "dns"
	phaseConnect = "connect"
	phaseTLS     = "tls handshake"
	phaseWrite   = "write request"
	phaseRead    = "read response"
	phaseBody    = "read body"
)

// dial resolves host (unless it is an IP address) to an address of the check's family,
// applies the address policy to it and connects over network ("tcp" or "udp"), adding the
// time spent to res.
func (p *Prober) dial(ctx context.Context, network, host string, port, ipVersion int, res *Result) (net.Conn, error) {
	ap, err := p.resolve(ctx, host, port, ipVersion, res)
	if err != nil {
		return nil, err
	}
	return p.connect(ctx, network, ap, res)
}

// resolve resolves host (unless it is an IP address) to an address of the check's family
// and applies the address policy to it, adding the time spent to res and setting
// res.Address.
func (p *Prober) resolve(ctx context.Context, host string, port, ipVersion int, res *Result) (netip.AddrPort, error) {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	addr, err := netip.ParseAddr(host)
	if err != nil {
		family := "ip4"
		if ipVersion == 6 {
			family = "ip6"
		}
		t0 := time.Now()
		addrs, err := p.resolver.LookupNetIP(ctx, family, host)
		res.Timings.DNS += time.Since(t0)
		if err != nil {
			return netip.AddrPort{}, &phaseError{phaseDNS, fmt.Errorf("resolve %s: %w", host, err)}
		}
		if len(addrs) == 0 {
			return netip.AddrPort{}, &phaseError{phaseDNS, fmt.Errorf("resolve %s: no %s address", host, family)}
		}
		addr = addrs[0]
		if family == "ip4" {
			addr = addr.Unmap()
		}
	}
	ap := netip.AddrPortFrom(addr, uint16(port))
	res.Address = ap
	if err := p.guard.check(addr); err != nil {
		return netip.AddrPort{}, &phaseError{phaseConnect, err}
	}
	return ap, nil
}

// connect opens a connection to ap, an address resolve returned, adding the time spent to
// res.
func (p *Prober) connect(ctx context.Context, network string, ap netip.AddrPort, res *Result) (net.Conn, error) {
	t0 := time.Now()
	conn, err := p.dialer.DialContext(ctx, network, ap.String())
	res.Timings.Connect += time.Since(t0)
	if err != nil {
		return nil, &phaseError{phaseConnect, err}
	}
	return conn, nil
}

// hostPort writes host and port as an authority, bracketing IPv6 literals.
func hostPort(host string, port int) string {
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), strconv.Itoa(port))
}
