package control

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/vigil-dns/vigil/tlsconf"
)

// newRaftTransport returns the raft transport of cfg: plain TCP, or mutual TLS when
// cfg.RaftTLS is set, where both ends must hold a certificate of the CA with the control
// role.
func newRaftTransport(cfg ServerConfig, hlog hclog.Logger) (raft.Transport, error) {
	addr, err := net.ResolveTCPAddr("tcp", cfg.RaftAddr)
	if err != nil {
		return nil, fmt.Errorf("control: raft address %q: %w", cfg.RaftAddr, err)
	}
	if cfg.RaftTLS == nil {
		t, err := raft.NewTCPTransportWithLogger(cfg.RaftAddr, addr, 3, 10*time.Second, hlog)
		if err != nil {
			return nil, fmt.Errorf("control: raft transport: %w", err)
		}
		return t, nil
	}
	ln, err := net.Listen("tcp", cfg.RaftAddr)
	if err != nil {
		return nil, fmt.Errorf("control: raft transport: %w", err)
	}
	adv := addr
	if adv.Port == 0 || adv.IP == nil || adv.IP.IsUnspecified() {
		la := ln.Addr().(*net.TCPAddr)
		if adv.Port == 0 {
			adv = &net.TCPAddr{IP: adv.IP, Port: la.Port}
		}
		if adv.IP == nil || adv.IP.IsUnspecified() {
			ln.Close()
			return nil, fmt.Errorf("control: raft address %q: a TLS transport advertises it, so it must name a host", cfg.RaftAddr)
		}
	}
	peer := tlsconf.Peer{Roles: []string{tlsconf.RoleControl}, SkipHostname: true}
	s := &tlsStream{
		Listener: tlsconf.NewListener(ln, cfg.RaftTLS.ServerConfig(peer), cfg.RaftListenerLimits, "raft", cfg.TLSMetrics),
		adv:      adv,
		client:   cfg.RaftTLS.ClientConfig(peer),
	}
	return raft.NewNetworkTransportWithLogger(s, 3, 10*time.Second, hlog), nil
}

// tlsStream is raft's stream layer over mutual TLS: its listener hands raft only connections
// whose handshake verified a voter's certificate; it dials voters with this voter's.
type tlsStream struct {
	net.Listener
	adv    net.Addr
	client *tls.Config
}

// Addr returns the address other voters dial.
func (s *tlsStream) Addr() net.Addr { return s.adv }

// Dial connects to a voter and completes the handshake within timeout.
func (s *tlsStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	d := &tls.Dialer{NetDialer: &net.Dialer{}, Config: s.client}
	c, err := d.DialContext(ctx, "tcp", string(address))
	if err != nil {
		return nil, fmt.Errorf("control: raft dial %s: %w", address, err)
	}
	return c, nil
}
