package control

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// selfSigned returns a server TLS config for 127.0.0.1 and a client that trusts it.
func selfSigned(t *testing.T) (*tls.Config, *http.Client) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vigil test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
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
	server := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return server, client
}

// TestTLS: the API over TLS, a write through a follower forwarded to the leader over TLS, and
// a plain-HTTP request refused.
func TestTLS(t *testing.T) {
	serverTLS, client := selfSigned(t)
	c := newClusterWith(t, 2, &cluster{maxBody: 1 << 20, timing: testTiming, serverTLS: serverTLS, client: client})
	c.leader(5 * time.Second)
	f := c.follower()
	code, out := doWith(t, client, "PUT", f.url()+"/v1/document", testToken, "application/yaml", testDoc)
	if code != http.StatusOK {
		t.Fatalf("write over TLS through a follower: %d %s", code, out)
	}
	plain := "http://" + strings.TrimPrefix(f.url(), "https://")
	code, _ = doWith(t, client, "GET", plain+"/v1/state", "", "", "")
	if code == http.StatusOK {
		t.Fatal("plain HTTP answered on a TLS API")
	}
}
