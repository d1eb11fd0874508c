package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// Peer says what a peer's certificate must be besides chaining to the CA.
type Peer struct {
	// Roles: the certificate must carry one of them; none means any certificate of the CA.
	Roles []string
	// Optional (server side only): a client may connect without a certificate (the control
	// API, where a bearer token is the alternative); one it presents is still verified.
	Optional bool
	// SkipHostname (client side only): the server's certificate is not matched against the
	// name dialled. Raft dials voters by the address in its configuration, often an IP
	// address no certificate names; the role is what it checks.
	SkipHostname bool
}

// ServerConfig returns the configuration of a TLS server: it presents the node's
// certificate, asks the client for one and verifies it against the CA and peer's roles,
// both read from the files at the handshake (after Recheck). Verification is Vigil's own
// (VerifyConnection), so that a new CA file takes effect without a restart.
func (s *Store) ServerConfig(peer Peer) *tls.Config {
	auth := tls.RequireAnyClientCert
	if peer.Optional {
		auth = tls.RequestClientCert
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ClientAuth: auth,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, _ := s.current()
			return c, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				if peer.Optional {
					return nil
				}
				return errors.New("tlsconf: the client presented no certificate")
			}
			_, err := s.verify(cs.PeerCertificates, x509.ExtKeyUsageClientAuth, "", peer.Roles)
			return err
		},
	}
}

// ClientConfig returns the configuration of a TLS client: it verifies the server's
// certificate against the CA (and the name dialled, unless peer.SkipHostname) and presents
// the node's certificate, both read from the files at the handshake.
func (s *Store) ClientConfig(peer Peer) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verification is VerifyConnection's, against the CA read at the handshake.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, _ := s.current()
			return c, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			host := cs.ServerName
			if peer.SkipHostname {
				host = ""
			}
			_, err := s.verify(cs.PeerCertificates, x509.ExtKeyUsageServerAuth, host, peer.Roles)
			return err
		},
	}
}

// PeerRoles verifies the certificate a client presented on cs against the CA (as a client
// certificate) and returns its roles; ok is false when there is none or it does not verify.
// The control API authenticates a client with it.
func (s *Store) PeerRoles(cs *tls.ConnectionState) (roles []string, ok bool) {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		return nil, false
	}
	leaf, err := s.verify(cs.PeerCertificates, x509.ExtKeyUsageClientAuth, "", nil)
	if err != nil {
		return nil, false
	}
	return Roles(leaf), true
}

// verify checks a peer's chain against the CA in use at the Store's time, for usage, the
// host name when not empty, and one of roles when any are given.
func (s *Store) verify(chain []*x509.Certificate, usage x509.ExtKeyUsage, host string, roles []string) (*x509.Certificate, error) {
	if len(chain) == 0 {
		return nil, errors.New("tlsconf: the peer presented no certificate")
	}
	_, pool := s.current()
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	leaf := chain[0]
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: inter, DNSName: host, CurrentTime: s.opts.Now(),
		KeyUsages: []x509.ExtKeyUsage{usage},
	})
	if err != nil {
		return nil, fmt.Errorf("tlsconf: peer certificate %q: %w", leaf.Subject.String(), err)
	}
	if len(roles) > 0 && !HasRole(leaf, roles...) {
		return nil, fmt.Errorf("tlsconf: peer certificate %q has none of the roles %v", leaf.Subject.String(), roles)
	}
	return leaf, nil
}
