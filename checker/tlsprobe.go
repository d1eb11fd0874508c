package checker

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// handshake runs the TLS handshake of a probe on conn, offering the application protocols
// alpn, and records its time and the server's certificate expiry in res.
func (p *Prober) handshake(conn net.Conn, c *config.Check, sni string, alpn []string, res *Result) (*tls.Conn, error) {
	roots := p.roots
	if c.TLSCA != "" && c.TLSVerify {
		var err error
		if roots, err = p.bundles.pool(c.TLSCA); err != nil {
			return nil, err // the check's fault, not the server's
		}
	}
	t0 := time.Now()
	tc := tls.Client(conn, &tls.Config{
		ServerName:         sni,
		InsecureSkipVerify: !c.TLSVerify,
		RootCAs:            roots,
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

// maxBundles bounds the CA bundles a Prober keeps parsed; past it the cache starts over.
const maxBundles = 1024

// bundleCache holds the certificate pools of the checks' CA bundles (tls_ca), parsed once
// each, keyed by the bundle's text.
type bundleCache struct {
	mu    sync.Mutex
	pools map[string]*x509.CertPool
}

// pool returns the pool of the PEM bundle b.
func (bc *bundleCache) pool(b string) (*x509.CertPool, error) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if cp, ok := bc.pools[b]; ok {
		return cp, nil
	}
	cp := x509.NewCertPool()
	if !cp.AppendCertsFromPEM([]byte(b)) {
		return nil, fmt.Errorf("checker: tls_ca holds no PEM certificate")
	}
	if bc.pools == nil || len(bc.pools) >= maxBundles {
		bc.pools = map[string]*x509.CertPool{}
	}
	bc.pools[b] = cp
	return cp, nil
}

// isNoALPN reports whether err is the server's no_application_protocol alert: it speaks
// none of the protocols offered.
func isNoALPN(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error" && oe.Err != nil &&
		oe.Err.Error() == "tls: no application protocol"
}
