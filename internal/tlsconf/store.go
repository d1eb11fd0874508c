package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"
)

// The roles a certificate may carry, as OrganizationalUnit values of its subject.
const (
	// RoleControl is a raft voter: it may speak raft and write to the control API.
	RoleControl = "control"
	// RoleChecker is a checker: it may read the control API.
	RoleChecker = "checker"
	// RoleLocation is a location: it may read the control API.
	RoleLocation = "location"
	// RoleOperator is a person or tool (vigil apply, vigil keyring): it may write to the
	// control API.
	RoleOperator = "operator"
)

// DefaultRecheck is how often a Store looks at its files' modification times by default.
const DefaultRecheck = 5 * time.Second

// Files names a node's certificate (PEM, the leaf first, then any intermediates), its key
// (PEM) and the CA certificates (PEM) its peers' certificates must chain to.
type Files struct {
	Cert, Key, CA string
}

// Options tune a Store. The zero value is usable.
type Options struct {
	// Recheck is how often the files' modification times and sizes are looked at, at the
	// next handshake or scrape after it has passed. Default DefaultRecheck.
	Recheck time.Duration
	// Now is the clock; default time.Now (tests move it).
	Now func() time.Time
	// Logger receives a line for each reload and each failed one; nil discards them.
	Logger *slog.Logger
}

// Store holds a node's certificate and CA pool, read from Files and read again when a
// file's modification time or size changes. A reload that fails (a half-written file, a key
// that does not match) keeps the pair in use and is logged and counted. Its methods are safe
// for concurrent use.
type Store struct {
	files Files
	opts  Options
	log   *slog.Logger
	// static: the pair and pool were made in memory (NewSecretStore); no file to reload.
	static bool

	mu      sync.Mutex
	checked time.Time
	stamp   []fileStamp
	cert    *tls.Certificate
	leaf    *x509.Certificate
	pool    *x509.CertPool
	cas     []*x509.Certificate
	reloads struct{ ok, failed uint64 }
}

// fileStamp is what tells a file changed: its modification time and size.
type fileStamp struct {
	mod  time.Time
	size int64
}

// Load reads the files and returns a Store that keeps them current. Every file is required.
func Load(f Files, opts Options) (*Store, error) {
	if f.Cert == "" || f.Key == "" || f.CA == "" {
		return nil, errors.New("tlsconf: a certificate, its key and a CA file are all required")
	}
	if opts.Recheck <= 0 {
		opts.Recheck = DefaultRecheck
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{files: f, opts: opts, log: log}
	stamp, err := s.stat()
	if err != nil {
		return nil, err
	}
	if err := s.load(stamp); err != nil {
		return nil, err
	}
	s.checked = opts.Now()
	return s, nil
}

// stat returns the stamps of the three files.
func (s *Store) stat() ([]fileStamp, error) {
	var out []fileStamp
	for _, p := range []string{s.files.Cert, s.files.Key, s.files.CA} {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("tlsconf: %w", err)
		}
		out = append(out, fileStamp{fi.ModTime(), fi.Size()})
	}
	return out, nil
}

// load reads the files and replaces the pair and pool; s.mu is held or s is not shared yet.
func (s *Store) load(stamp []fileStamp) error {
	cert, err := tls.LoadX509KeyPair(s.files.Cert, s.files.Key)
	if err != nil {
		return fmt.Errorf("tlsconf: certificate %s and key %s: %w", s.files.Cert, s.files.Key, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return fmt.Errorf("tlsconf: certificate %s: %w", s.files.Cert, err)
	}
	cert.Leaf = leaf
	cas, err := readCerts(s.files.CA)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	for _, c := range cas {
		pool.AddCert(c)
	}
	s.cert, s.leaf, s.pool, s.cas, s.stamp = &cert, leaf, pool, cas, stamp
	return nil
}

// readCerts reads every certificate of a PEM file; at least one.
func readCerts(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %w", err)
	}
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("tlsconf: CA file %s: %w", path, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("tlsconf: no certificate in CA file %s", path)
	}
	return out, nil
}

// current returns the pair and pool in use, first reading the files again when Recheck has
// passed and one of them changed.
func (s *Store) current() (*tls.Certificate, *x509.CertPool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	if now.Sub(s.checked) >= s.opts.Recheck {
		s.checked = now
		s.reloadLocked(false)
	}
	return s.cert, s.pool
}

// Reload reads the files again now if one of them changed (or always, with force), and
// returns the error of a failed read; the pair in use stays then.
func (s *Store) Reload(force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checked = s.opts.Now()
	return s.reloadLocked(force)
}

func (s *Store) reloadLocked(force bool) error {
	if s.static {
		return nil
	}
	stamp, err := s.stat()
	if err == nil && !force && slices.Equal(stamp, s.stamp) {
		return nil
	}
	if err == nil {
		err = s.load(stamp)
	}
	if err != nil {
		s.reloads.failed++
		s.log.Warn("tlsconf: reloading the certificate failed; the one in use stays", "err", err)
		return err
	}
	s.reloads.ok++
	s.log.Info("tlsconf: certificate reloaded", "subject", s.leaf.Subject.String(),
		"not_after", s.leaf.NotAfter.UTC().Format(time.RFC3339))
	return nil
}

// Leaf returns the node's certificate in use.
func (s *Store) Leaf() *x509.Certificate {
	s.current()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaf
}

// Expiry returns when the node's certificate and the earliest CA certificate expire.
func (s *Store) Expiry() (cert, ca time.Time) {
	s.current()
	s.mu.Lock()
	defer s.mu.Unlock()
	cert = s.leaf.NotAfter
	for i, c := range s.cas {
		if i == 0 || c.NotAfter.Before(ca) {
			ca = c.NotAfter
		}
	}
	return cert, ca
}

// Roles returns the roles a certificate carries.
func Roles(c *x509.Certificate) []string {
	return slices.Clone(c.Subject.OrganizationalUnit)
}

// HasRole reports whether the certificate carries one of the roles.
func HasRole(c *x509.Certificate, roles ...string) bool {
	for _, r := range c.Subject.OrganizationalUnit {
		if slices.Contains(roles, r) {
			return true
		}
	}
	return false
}
