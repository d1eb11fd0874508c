package main

import (
	"fmt"
	"net"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/status"
	"github.com/vigil-dns/vigil/status/verify"
)

// verifyFlags configure a checker's answer verification in `vigil agent`.
type verifyFlags struct {
	interval          time.Duration
	httpPort, dnsPort string
}

// newAgentVerifier returns the answer verifier of checker n, or nil when verification is off.
// It asks the locations of n's gossip pool for their status API where each advertises it
// (status.HostPortURL: the advertised address, else the host of its gossip address and
// httpPort), and their DNS at the host of their gossip address on dnsPort (every location on
// the same DNS port). Virtual name servers are not asked: their addresses are each location's
// own flags.
func newAgentVerifier(n *agent.Node, roles agent.Roles, f verifyFlags) (*verify.Verifier, error) {
	if f.interval <= 0 || !roles.Has(agent.RoleChecker) {
		return nil, nil
	}
	if f.httpPort == "" || f.dnsPort == "" {
		return nil, fmt.Errorf("-verify-interval: the locations' HTTP and DNS ports are needed (-verify-http-port, -verify-dns-port)")
	}
	v, err := verify.New(verify.Options{
		Document:  n.Document,
		Version:   func() uint64 { return n.ConfigInfo().Index },
		Locations: func() []verify.Location { return poolLocations(n.Members(), f.httpPort, f.dnsPort) },
		Interval:  f.interval, Registerer: n.Registerer(), Logger: n.Logger(),
	})
	if err != nil {
		return nil, fmt.Errorf("-verify-interval: %w", err)
	}
	return v, nil
}

// poolLocations returns the locations among members, reached at their gossip host.
func poolLocations(members []gossip.Member, httpPort, dnsPort string) []verify.Location {
	var out []verify.Location
	for _, m := range members {
		if !m.Roles.Has(gossip.RoleLocation) || m.Leaving {
			continue
		}
		host, _, err := net.SplitHostPort(m.Addr)
		if err != nil {
			continue
		}
		url := status.HostPortURL(httpPort)(status.Member{Addr: m.Addr, HTTP: m.HTTP})
		out = append(out, verify.Location{ID: m.ID, Status: url, DNS: net.JoinHostPort(host, dnsPort)})
		if len(out) == verify.MaxLocations {
			break
		}
	}
	return out
}
