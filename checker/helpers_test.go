package checker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// rawServer is a real TCP server on loopback whose every connection is handled by handle.
// It closes its listener and connections when the test ends and waits for its goroutines.
func rawServer(t testing.TB, handle func(ctx context.Context, c net.Conn)) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { handle(ctx, c) })
		}
	})
	t.Cleanup(func() {
		cancel()
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return netip.MustParseAddrPort(ln.Addr().String())
}

// readRequest reads an HTTP request's head from c, so that a handler answers after it.
func readRequest(c net.Conn) {
	buf := make([]byte, 4096)
	var got []byte
	for len(got) < 64<<10 {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil || containsCRLFCRLF(got) {
			return
		}
	}
}

func containsCRLFCRLF(b []byte) bool {
	for i := 0; i+3 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' && b[i+2] == '\r' && b[i+3] == '\n' {
			return true
		}
	}
	return false
}

// httpServer is a real net/http server on loopback.
func httpServer(t testing.TB, h http.HandlerFunc) netip.AddrPort {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return netip.MustParseAddrPort(srv.Listener.Addr().String())
}

// checkFor returns a check of ap with the defaults and a short timeout.
func checkFor(id string, proto config.Protocol, ap netip.AddrPort) config.Check {
	c := config.DefaultCheck()
	c.ID, c.Protocol = id, proto
	c.Target = config.Target{Host: ap.Addr().String(), Port: int(ap.Port())}
	c.Timeout = config.Duration(time.Second)
	return c
}

// loopbackProber probes with loopback allowed, as dev mode does.
func loopbackProber(opts ProberOptions) *Prober {
	opts.Addresses.AllowLoopback = true
	return NewProber(opts)
}

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "vigil test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// pem returns the CA's certificate in PEM, as a check's tls_ca holds it.
func (ca *testCA) pem() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}))
}

// leaf issues a certificate for names valid from notBefore to notAfter; a nil ca makes it
// self-signed.
func (ca *testCA) leaf(t testing.TB, names []string, ips []net.IP, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "vigil test target"},
		DNSNames:     names,
		IPAddresses:  ips,
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	parent, signer := tmpl, any(key)
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// tlsServer is a real HTTPS server on loopback with cert; it records the SNI of each
// handshake.
func tlsServer(t testing.TB, cert tls.Certificate, h http.HandlerFunc) (netip.AddrPort, *atomic.Value) {
	t.Helper()
	var sni atomic.Value
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{cert},
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			sni.Store(hello.ServerName)
			return nil, nil
		},
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return netip.MustParseAddrPort(srv.Listener.Addr().String()), &sni
}

// staticResolver answers from a table, like a hosts file, and counts lookups. Tests use it
// to point host names at loopback servers, and to rebind a name to another address.
type staticResolver struct {
	mu      sync.Mutex
	hosts   map[string][]netip.Addr
	lookups map[string]int // by network
}

func (r *staticResolver) set(host string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hosts == nil {
		r.hosts = map[string][]netip.Addr{}
	}
	r.hosts[host] = nil
	for _, a := range addrs {
		r.hosts[host] = append(r.hosts[host], netip.MustParseAddr(a))
	}
}

func (r *staticResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lookups == nil {
		r.lookups = map[string]int{}
	}
	r.lookups[network]++
	var out []netip.Addr
	for _, a := range r.hosts[host] {
		if (network == "ip4") == a.Is4() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

func (r *staticResolver) count(network string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[network]
}

func port(ap netip.AddrPort) string { return strconv.Itoa(int(ap.Port())) }

// quiet is a logger for checkers whose warnings a test provokes on purpose.
func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }
