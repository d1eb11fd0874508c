package tlsconf

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// CA is a certificate authority that issues node certificates: ECDSA P-256 (from NewCA or
// LoadCA), or any other signer (Signer: the CA derived from a cluster secret, Ed25519).
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// Signer, when set, signs instead of Key.
	Signer crypto.Signer
}

// signer returns the key that signs the CA's certificates.
func (ca *CA) signer() crypto.Signer {
	if ca.Signer != nil {
		return ca.Signer
	}
	return ca.Key
}

// Request is a node certificate to issue.
type Request struct {
	// Name is the node's name: the certificate's common name and a DNS name of it.
	Name string
	// Roles are the roles it carries (RoleControl, RoleChecker, RoleLocation, RoleOperator).
	Roles []string
	// Hosts are further DNS names and IP addresses it is valid for.
	Hosts []string
}

// NewCA creates a CA valid from now (less a minute, for clocks a little behind) for valid.
func NewCA(name string, now time.Time, valid time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: name, Organization: []string{"vigil"}},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(valid),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// Issue creates a node certificate and key (PEM), valid from now for valid, for both server
// and client use: every node is both on some link.
func (ca *CA) Issue(req Request, now time.Time, valid time.Duration) (certPEM, keyPEM []byte, err error) {
	if req.Name == "" {
		return nil, nil, errors.New("tlsconf: a certificate needs a name")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: key of %s: %w", req.Name, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: req.Name, Organization: []string{"vigil"}, OrganizationalUnit: slices.Clone(req.Roles)},
		NotBefore:    now.Add(-time.Minute), NotAfter: now.Add(valid),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{req.Name},
	}
	for _, h := range req.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if !slices.Contains(tmpl.DNSNames, h) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.signer())
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: certificate of %s: %w", req.Name, err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: key of %s: %w", req.Name, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// PEM returns the CA's certificate and key in PEM.
func (ca *CA) PEM() (certPEM, keyPEM []byte, err error) {
	kder, err := x509.MarshalECPrivateKey(ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: CA key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// LoadCA reads a CA's certificate and key (PEM).
func LoadCA(certFile, keyFile string) (*CA, error) {
	cs, err := readCerts(certFile)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %w", err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, fmt.Errorf("tlsconf: no PEM key in %s", keyFile)
	}
	key, err := x509.ParseECPrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: CA key %s: %w", keyFile, err)
	}
	if !key.PublicKey.Equal(cs[0].PublicKey) {
		return nil, fmt.Errorf("tlsconf: the key %s is not the key of %s", keyFile, certFile)
	}
	return &CA{Cert: cs[0], Key: key}, nil
}

// InitOptions are the choices of Init.
type InitOptions struct {
	// Now is the start of validity.
	Now time.Time
	// CAValid and CertValid are how long the CA and the node certificates are valid.
	CAValid, CertValid time.Duration
	// KeyMode is the mode of the key files written; default 0600.
	KeyMode os.FileMode
}

// Init writes a CA (ca.pem, ca-key.pem) into dir, or reuses the one there, and a certificate
// and key (NAME.pem, NAME-key.pem) for each request, replacing those of the same name: run
// again, it renews certificates without changing the CA that peers trust. It returns the
// files written.
func Init(dir string, reqs []Request, o InitOptions) ([]string, error) {
	if o.KeyMode == 0 {
		o.KeyMode = 0o600
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tlsconf: %w", err)
	}
	caCert, caKey := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	var written []string
	ca, err := LoadCA(caCert, caKey)
	if errors.Is(err, os.ErrNotExist) {
		if ca, err = NewCA("vigil CA", o.Now, o.CAValid); err != nil {
			return nil, err
		}
		cp, kp, err := ca.PEM()
		if err != nil {
			return nil, err
		}
		if err := writeFile(caCert, cp, 0o644); err != nil {
			return nil, err
		}
		if err := writeFile(caKey, kp, o.KeyMode); err != nil {
			return nil, err
		}
		written = append(written, caCert, caKey)
	} else if err != nil {
		return nil, err
	}
	for _, r := range reqs {
		if strings.ContainsAny(r.Name, `/\`) || r.Name == "ca" || r.Name == "." || r.Name == ".." {
			return written, fmt.Errorf("tlsconf: %q cannot name a certificate file", r.Name)
		}
		cp, kp, err := ca.Issue(r, o.Now, o.CertValid)
		if err != nil {
			return written, err
		}
		cf, kf := filepath.Join(dir, r.Name+".pem"), filepath.Join(dir, r.Name+"-key.pem")
		// The key first: a node that reloads between the two writes sees a pair that does
		// not match and keeps the one it has until the certificate follows.
		if err := writeFile(kf, kp, o.KeyMode); err != nil {
			return written, err
		}
		if err := writeFile(cf, cp, 0o644); err != nil {
			return written, err
		}
		written = append(written, cf, kf)
	}
	return written, nil
}

// writeFile writes data to path through a temporary file renamed over it, so that a reader
// sees the old file or the new one.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("tlsconf: %w", err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return fmt.Errorf("tlsconf: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("tlsconf: %w", err)
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
