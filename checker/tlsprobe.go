package checker

import (
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// handshake runs the TLS handshake of a probe on conn, offering the application protocols
// alpn, and records its time and the server's certificate expiry in res.
func (p *Prober) handshake(conn net.Conn, c *config.Check, sni string, alpn []string, res *Result) (*tls.Conn, error) {
	t0 := time.Now()
	tc := tls.Client(conn, &tls.Config{
		ServerName:         sni,
		InsecureSkipVerify: !c.TLSVerify,
		RootCAs:            p.roots,
		NextProtos:         alpn,
		MinVersion:         tls.VersionTLS12,
	})
	// The connection's deadline and the context hook of bindDeadline end a stalled
	// handshake; HandshakeContext would add a goroutine per probe to do the same.
	err := tc.Handshake()
	res.Timings.TLS += time.Since(t0)
	if err != nil {
		var cve *tls.CertificateVerificationError
		if errors.As(err, &cve) && len(cve.UnverifiedCertificates) > 0 {
			res.CertNotAfter = cve.UnverifiedCertificates[0].NotAfter
		}
		return nil, &phaseError{phaseTLS, err}
	}
	if st := tc.ConnectionState(); len(st.PeerCertificates) > 0 {
		res.CertNotAfter = st.PeerCertificates[0].NotAfter
	}
	return tc, nil
}
