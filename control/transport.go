package control

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// newRaftTransport returns the raft transport of cfg: mutual TLS in every configuration but
// the development one. With cfg.RaftTLS both ends hold a certificate of the CA with the
// control role; with cfg.RaftSecret both derive the same CA from the cluster secret and each
// presents a leaf certificate it signed with it (tlsconf.NewSecretStore). Plain TCP, on which
// anyone who reaches the port can append to the log, only with cfg.InsecureRaftPlaintext.
func newRaftTransport(cfg ServerConfig, hlog hclog.Logger, log *slog.Logger) (raft.Transport, error) {
	addr, err := net.ResolveTCPAddr("tcp", cfg.RaftAddr)
	if err != nil {
		return nil, fmt.Errorf("control: raft address %q: %w", cfg.RaftAddr, err)
	}
	store, err := raftCredentials(cfg)
	if err != nil {
		return nil, err
	}
	if store == nil && cfg.RaftAdvertise != "" {
		return nil, fmt.Errorf("control: raft advertise address %q: plain raft advertises its listen address only; give the voters -raft-secret-file or -tls-* (which a cluster that names its voters needs anyway)", cfg.RaftAdvertise)
	}
	if store == nil {
		log.Warn("control: INSECURE: raft runs over plain TCP without authentication: anyone who reaches "+
			"the raft port can rewrite the cluster's state. Development only: give the voters -raft-secret-file "+
			"or -tls-cert, -tls-key and -tls-ca instead", "raft", cfg.RaftAddr)
		var adv net.Addr = addr
		if addr.Port == 0 {
			adv = nil // the port the listener took
		}
		t, err := raft.NewTCPTransportWithLogger(cfg.RaftAddr, adv, 3, 10*time.Second, hlog)
		if err != nil {
			return nil, fmt.Errorf("control: raft transport: %w", err)
		}
		return t, nil
	}
	ln, err := net.Listen("tcp", cfg.RaftAddr)
	if err != nil {
		return nil, fmt.Errorf("control: raft transport: %w", err)
	}
	if cfg.RaftAdvertise != "" {
		named, err := advertised(cfg.RaftAdvertise)
		if err != nil {
			ln.Close()
			return nil, err
		}
		return tlsTransport(ln, named, store, cfg, hlog), nil
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
	return tlsTransport(ln, adv, store, cfg, hlog), nil
}

// tlsTransport is raft's network transport over mutual TLS on ln, advertising adv.
func tlsTransport(ln net.Listener, adv net.Addr, store *tlsconf.Store, cfg ServerConfig, hlog hclog.Logger) raft.Transport {
	peer := tlsconf.Peer{Roles: []string{tlsconf.RoleControl}, SkipHostname: true}
	server, client := store.ServerConfig(peer), store.ClientConfig(peer)
	if offerBinaryLog {
		server.NextProtos = []string{alpnBinaryLog}
		client.NextProtos = []string{alpnBinaryLog}
	}
	s := &tlsStream{
		Listener: tlsconf.NewListener(ln, server, cfg.RaftListenerLimits, "raft", cfg.TLSMetrics),
		adv:      adv,
		client:   client,
		codecs:   cfg.codecs,
	}
	return raft.NewNetworkTransportWithLogger(s, 3, 10*time.Second, hlog)
}

// namedAddr is an advertised raft address kept as written: a DNS name is resolved when a
// voter dials it, not once at start.
type namedAddr string

func (a namedAddr) Network() string { return "tcp" }
func (a namedAddr) String() string  { return string(a) }

// advertised checks an advertised raft address: a host (name or IP, not unspecified) and a
// port other than 0.
func advertised(s string) (net.Addr, error) {
	host, port, err := net.SplitHostPort(s)
	if err == nil && (host == "" || port == "0") {
		err = errors.New("it needs a host and a port other than 0")
	}
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsUnspecified() {
		err = errors.New("other voters cannot dial an unspecified address")
	}
	if err != nil {
		return nil, fmt.Errorf("control: raft advertise address %q: %w; give the host:port other voters dial, e.g. voter-0.voters.ns.svc:7000", s, err)
	}
	return namedAddr(s), nil
}

// ErrNoRaftCredentials: a voter was configured with neither certificates nor a cluster
// secret for raft, and not explicitly insecure.
var ErrNoRaftCredentials = errors.New("control: raft needs credentials: give the voter a cluster secret " +
	"(vigil agent -raft-secret-file FILE; ServerConfig.RaftSecret) or certificates (-tls-cert, -tls-key and -tls-ca; " +
	"ServerConfig.RaftTLS); plain raft (-insecure-raft-plaintext) is for development only")

// raftCredentials returns the certificate store the raft transport authenticates with, nil
// for the insecure plain transport, or an error when cfg's choice is missing or ambiguous.
func raftCredentials(cfg ServerConfig) (*tlsconf.Store, error) {
	n := 0
	for _, set := range []bool{cfg.RaftTLS != nil, cfg.RaftSecret != nil, cfg.InsecureRaftPlaintext} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return nil, ErrNoRaftCredentials
	case n > 1:
		return nil, errors.New("control: raft credentials: give one of certificates (RaftTLS), a cluster secret " +
			"(RaftSecret) or InsecureRaftPlaintext, not several")
	case cfg.RaftTLS != nil:
		return cfg.RaftTLS, nil
	case cfg.InsecureRaftPlaintext:
		return nil, nil
	}
	store, err := tlsconf.NewSecretStore(cfg.RaftSecret, cfg.ID, []string{tlsconf.RoleControl}, tlsconf.Options{})
	if err != nil {
		return nil, fmt.Errorf("control: raft cluster secret: %w", err)
	}
	return store, nil
}

// tlsStream is raft's stream layer over mutual TLS: its listener hands raft only connections
// whose handshake verified a voter's certificate; it dials voters with this voter's.
type tlsStream struct {
	net.Listener
	adv    net.Addr
	client *tls.Config
	codecs *peerCodecs // what each voter dialled reads; nil: not recorded
}

// alpnBinaryLog is the TLS application protocol a voter offers and accepts on the raft port
// when it reads the binary encoding of the raft log (logbinary.go). A voter of an earlier
// release neither offers nor accepts one: the handshake succeeds and negotiates none.
const alpnBinaryLog = "vigil-raft-binlog-1"

// offerBinaryLog is false only in tests, for a voter of the release before.
var offerBinaryLog = true

// peerCodecs records, per raft address, whether the voter there reads the binary encoding
// of the log, as the last handshake with it said. A leader writes that encoding only when
// every server of the configuration does (Server.binaryLog).
type peerCodecs struct {
	mu     sync.Mutex
	binary map[raft.ServerAddress]bool
}

func (p *peerCodecs) record(addr raft.ServerAddress, binary bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.binary == nil {
		p.binary = make(map[raft.ServerAddress]bool)
	}
	p.binary[addr] = binary
}

// reads reports whether the voter at addr was last seen to read the binary encoding.
func (p *peerCodecs) reads(addr raft.ServerAddress) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.binary[addr]
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
	if tc, ok := c.(*tls.Conn); ok {
		s.codecs.record(address, tc.ConnectionState().NegotiatedProtocol == alpnBinaryLog)
	}
	return c, nil
}
