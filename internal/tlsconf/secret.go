package tlsconf

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Mutual TLS from a cluster secret. Voters that have no certificates of a CA share a
// 32-byte secret instead. From it each derives the same Ed25519 CA key (HKDF-SHA256 with a
// fixed info string) and the same CA certificate (every field fixed, and Ed25519 signatures
// are deterministic), then issues itself an ephemeral leaf certificate with the control role
// signed by that key. Raft then runs over the same mutual-TLS stream as with files: a peer
// must present a certificate that chains to the derived CA, which only a holder of the
// secret can sign. The secret itself never crosses the network.

// SecretSize is the size of a cluster secret in bytes.
const SecretSize = 32

// secretInfo is HKDF's info string: it binds the derived key to this one use, so that the
// same bytes used for anything else derive an unrelated key.
const secretInfo = "vigil raft CA ed25519 v1"

// secretCAName is the derived CA's common name (the same on every voter: leaf certificates
// name it as their issuer).
const secretCAName = "vigil raft CA (derived from the cluster secret)"

// leafValid is how long a voter's ephemeral leaf certificate is valid. It is issued anew at
// every start; the secret, not the leaf's lifetime, is the credential.
const leafValid = 10 * 365 * 24 * time.Hour

// SecretCA derives the CA certificate and key of a cluster secret. The same secret gives
// the same certificate and key on every voter.
func SecretCA(secret []byte) (*x509.Certificate, ed25519.PrivateKey, error) {
	if len(secret) != SecretSize {
		return nil, nil, fmt.Errorf("tlsconf: a cluster secret has %d bytes, not %d", SecretSize, len(secret))
	}
	seed, err := hkdf.Key(sha256.New, secret, nil, secretInfo, ed25519.SeedSize)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: derive the CA key: %w", err)
	}
	key := ed25519.NewKeyFromSeed(seed)
	pub := key.Public().(ed25519.PublicKey)
	skid := sha256.Sum256(pub)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: secretCAName, Organization: []string{"vigil"}},
		NotBefore:    time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
		IsCA:         true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage:     x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		SubjectKeyId: skid[:20],
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: derived CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: derived CA certificate: %w", err)
	}
	return cert, key, nil
}

// NewSecretStore returns a Store whose CA is derived from a cluster secret (SecretCA) and
// whose certificate is a fresh leaf for name with the given roles, signed by that CA. Its
// ServerConfig and ClientConfig accept only peers whose certificate was signed with the same
// secret. It reads no files and never reloads.
func NewSecretStore(secret []byte, name string, roles []string, opts Options) (*Store, error) {
	caCert, caKey, err := SecretCA(secret)
	if err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Recheck <= 0 {
		opts.Recheck = DefaultRecheck
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ca := &CA{Cert: caCert, Signer: caKey}
	certPEM, keyPEM, err := ca.Issue(Request{Name: name, Roles: roles}, opts.Now(), leafValid)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: leaf certificate of %s: %w", name, err)
	}
	if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
		return nil, fmt.Errorf("tlsconf: leaf certificate of %s: %w", name, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &Store{opts: opts, log: log, static: true, checked: opts.Now(),
		cert: &cert, leaf: cert.Leaf, pool: pool, cas: []*x509.Certificate{caCert}}, nil
}

// NewSecret returns a new random cluster secret.
func NewSecret() ([]byte, error) {
	b := make([]byte, SecretSize)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("tlsconf: cluster secret: %w", err)
	}
	return b, nil
}

// EncodeSecret writes a secret as its file holds it: base64 and a newline.
func EncodeSecret(secret []byte) []byte {
	return []byte(base64.StdEncoding.EncodeToString(secret) + "\n")
}

// ReadSecretFile reads a cluster secret file: the base64 of SecretSize bytes (surrounding
// white space ignored). It also returns a warning, not empty when the file may be read by
// others than its owner.
func ReadSecretFile(path string) (secret []byte, warning string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("tlsconf: cluster secret: %w", err)
	}
	text := strings.TrimSpace(string(data))
	secret, err = base64.StdEncoding.DecodeString(text)
	if err != nil {
		secret, err = base64.RawStdEncoding.DecodeString(text)
	}
	if err != nil || len(secret) != SecretSize {
		return nil, "", fmt.Errorf("tlsconf: cluster secret %s: want the base64 of %d random bytes on one line (e.g. `head -c %d /dev/urandom | base64 > FILE`)", path, SecretSize, SecretSize)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		warning = fmt.Sprintf("the cluster secret %s may be read by others (mode %v): chmod 600 it", path, fi.Mode().Perm())
	}
	return secret, warning, nil
}

// WriteSecretFile writes a new secret to path (mode 0600, its directory made 0700 when
// missing). It refuses to replace a file that exists.
func WriteSecretFile(path string, secret []byte) error {
	if len(secret) != SecretSize {
		return fmt.Errorf("tlsconf: a cluster secret has %d bytes, not %d", SecretSize, len(secret))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("tlsconf: cluster secret: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("tlsconf: cluster secret: %w", err)
	}
	_, werr := f.Write(EncodeSecret(secret))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(path)
		return fmt.Errorf("tlsconf: cluster secret %s: %w", path, err)
	}
	return nil
}
