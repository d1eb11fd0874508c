package agent

import (
	"fmt"
	"net"

	"github.com/vigil-dns/vigil/gossip"
)

// newPool creates the node's gossip membership.
func (n *Node) newPool() error {
	g := n.cfg.Gossip
	keys, err := n.poolKeys()
	if err != nil {
		return err
	}
	gc := gossip.Config{
		ID: n.cfg.ID, Region: n.cfg.Region, Roles: n.cfg.Roles, Version: n.cfg.Version,
		HTTPAddr: n.httpAdvertise(), Transport: n.cfg.Transport, Keys: keys, Insecure: g.Insecure, Profile: g.Profile,
		Seeds: g.Join, HeartbeatInterval: g.HeartbeatInterval, RejoinInterval: g.RejoinInterval,
		Inbound: g.Inbound, Registerer: n.reg, Logger: n.log, OnKeyring: n.saveKeyring,
		OnMembership: func(gossip.MemberEvent) {
			select {
			case n.memberCh <- struct{}{}:
			default:
			}
		},
	}
	if n.cfg.Transport == nil {
		host, port, err := splitHostPort(g.Bind)
		if err != nil {
			return fmt.Errorf("node: gossip bind: %w", err)
		}
		gc.BindAddr, gc.BindPort = host, port
		if g.Advertise != "" {
			host, port, err := splitHostPort(g.Advertise)
			if err != nil {
				return fmt.Errorf("node: gossip advertise: %w", err)
			}
			gc.AdvertiseAddr, gc.AdvertisePort = host, port
		}
	}
	pool, err := gossip.New(gc)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.pool = pool
	return nil
}

// splitHostPort splits host:port with a numeric port.
func splitHostPort(s string) (string, int, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	var p int
	if _, err := fmt.Sscan(port, &p); err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", s)
	}
	return host, p, nil
}
