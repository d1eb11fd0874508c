package tlsconf

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// pki writes a CA and certificates for the names (NAME=role,role) into a new directory.
func pki(t *testing.T, now time.Time, valid time.Duration, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	var reqs []Request
	for _, n := range names {
		name, roles, _ := strings.Cut(n, "=")
		reqs = append(reqs, Request{Name: name, Roles: strings.Split(roles, ","), Hosts: []string{"127.0.0.1", "localhost"}})
	}
	if _, err := Init(dir, reqs, InitOptions{Now: now, CAValid: 10 * valid, CertValid: valid}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func store(t *testing.T, dir, name string, o Options) *Store {
	t.Helper()
	s, err := Load(Files{Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem"), CA: filepath.Join(dir, "ca.pem")}, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// echoServer serves one byte back on each connection its Listener hands out.
func echoServer(t *testing.T, cfg *tls.Config, lim ListenerLimits) *Listener {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := NewListener(inner, cfg, lim, "test", nil)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 1)
				if _, err := io.ReadFull(c, b); err == nil {
					_, _ = c.Write(b)
				}
			}()
		}
	}()
	return ln
}

// roundTrip dials addr with cfg and reports whether one byte came back.
func roundTrip(addr string, cfg *tls.Config) error {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 3 * time.Second}, Config: cfg}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte{7}); err != nil {
		return err
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		return err
	}
	return nil
}

// TestMutualTLS: only a certificate of the CA, unexpired, with the role, gets through, both
// ways.
func TestMutualTLS(t *testing.T) {
	now := time.Now()
	dir := pki(t, now, time.Hour, "voter-1=control", "voter-2=control", "checker-1=checker")
	other := pki(t, now, time.Hour, "voter-x=control")
	old := pki(t, now.Add(-3*time.Hour), time.Hour, "voter-old=control")
	srv := store(t, dir, "voter-1", Options{})
	ln := echoServer(t, srv.ServerConfig(Peer{Roles: []string{RoleControl}}), ListenerLimits{})
	addr := ln.Addr().String()
	raft := Peer{Roles: []string{RoleControl}, SkipHostname: true}

	if err := roundTrip(addr, store(t, dir, "voter-2", Options{}).ClientConfig(raft)); err != nil {
		t.Fatalf("a voter of the CA: %v", err)
	}
	// A copy of the CA file with another CA's certificate: voter-x trusts voter-1 (its
	// CA file names both) but voter-1 does not trust voter-x.
	for name, cfg := range map[string]*tls.Config{
		"another CA":                            store(t, other, "voter-x", Options{}).ClientConfig(raft),
		"expired":                               clientOf(t, old, "voter-old", dir),
		"no role":                               store(t, dir, "checker-1", Options{}).ClientConfig(raft),
		"no cert":                               {InsecureSkipVerify: true}, //nolint:gosec // the attacker's side
		"checker, asking nothing of the server": store(t, dir, "checker-1", Options{}).ClientConfig(Peer{SkipHostname: true}),
	} {
		if err := roundTrip(addr, cfg); err == nil {
			t.Errorf("%s: got through", name)
		}
	}
	// Plaintext: the server answers no byte of echo.
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	b, _ := io.ReadAll(c)
	c.Close()
	if strings.Contains(string(b), "GET") {
		t.Errorf("plaintext echoed: %q", b)
	}
	// The client side: a voter refuses a server of another CA.
	evil := echoServer(t, store(t, other, "voter-x", Options{}).ServerConfig(Peer{}), ListenerLimits{})
	if err := roundTrip(evil.Addr().String(), store(t, dir, "voter-2", Options{}).ClientConfig(raft)); err == nil {
		t.Error("a voter talked to a server of another CA")
	}
	if acc, _, failed := ln.Counts(); acc != 1 || failed < 5 {
		t.Errorf("accepted %d (want 1), failed %d (want >= 5)", acc, failed)
	}
}

// clientOf is a client with the certificate of name in dir and the CA of caDir.
func clientOf(t *testing.T, dir, name, caDir string) *tls.Config {
	t.Helper()
	s, err := Load(Files{Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem"), CA: filepath.Join(caDir, "ca.pem")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s.ClientConfig(Peer{SkipHostname: true})
}

// TestReload: a certificate renewed on disk is in use after Recheck, without a restart, and
// its expiry metric follows; a broken file keeps the pair in use.
func TestReload(t *testing.T) {
	var clock atomic.Int64
	start := time.Now()
	clock.Store(start.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	dir := pki(t, start, time.Hour, "voter-1=control")
	s := store(t, dir, "voter-1", Options{Recheck: time.Minute, Now: now})
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg, s); err != nil {
		t.Fatal(err)
	}
	first := s.Leaf().SerialNumber
	firstExpiry, _ := s.Expiry()
	if _, err := Init(dir, []Request{{Name: "voter-1", Roles: []string{RoleControl}}}, InitOptions{Now: start, CAValid: time.Hour, CertValid: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if s.Leaf().SerialNumber.Cmp(first) != 0 {
		t.Fatal("reloaded before Recheck passed")
	}
	clock.Add(int64(time.Minute))
	if s.Leaf().SerialNumber.Cmp(first) == 0 {
		t.Fatal("the renewed certificate was not loaded after Recheck")
	}
	exp, _ := s.Expiry()
	if !exp.After(firstExpiry.Add(40 * time.Hour)) {
		t.Fatalf("expiry %v, want about 48h after %v", exp, start)
	}
	got := gauge(t, reg, "node")
	if int64(got) != exp.Unix() {
		t.Fatalf("vigil_tls_certificate_expiry_timestamp_seconds = %v, want %d", got, exp.Unix())
	}
	// A truncated key: the reload fails, the pair in use stays.
	if err := writeFile(filepath.Join(dir, "voter-1-key.pem"), []byte("-----BEGIN"), 0o600); err != nil {
		t.Fatal(err)
	}
	clock.Add(int64(time.Minute))
	if s.Leaf().SerialNumber.Cmp(first) == 0 || s.Reload(false) == nil {
		t.Fatal("a broken key replaced the pair in use, or its reload did not fail")
	}
	if s.reloads.failed == 0 {
		t.Fatal("the failed reload was not counted")
	}
}

// gauge returns the expiry gauge of one certificate.
func gauge(t *testing.T, reg *prometheus.Registry, which string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "vigil_tls_certificate_expiry_timestamp_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == which {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatal("no expiry metric")
	return 0
}

// TestHandshakeLimits: one network (127.0.2.0/24, a connection from each of 30 of its
// addresses) that holds every handshake slot it may, silent, does not keep a client of
// another network (127.0.0.1) out; its further connections are refused at once.
func TestHandshakeLimits(t *testing.T) {
	dir := pki(t, time.Now(), time.Hour, "voter-1=control", "voter-2=control")
	srv := store(t, dir, "voter-1", Options{})
	lim := ListenerLimits{MaxHandshakes: 40, MaxHandshakesPerSource: 8, HandshakeTimeout: 20 * time.Second}
	ln := echoServer(t, srv.ServerConfig(Peer{Roles: []string{RoleControl}}), lim)
	addr := ln.Addr().String()
	var silent []net.Conn
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	for i := range 30 {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 2, byte(1+i))}, Timeout: time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
	}
	// The refused ones are closed by the server: a read ends at once.
	var mu sync.Mutex
	closed := 0
	var wg sync.WaitGroup
	for _, c := range silent {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, err := c.Read(make([]byte, 1))
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				mu.Lock()
				closed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if closed != 22 {
		t.Errorf("%d of 30 silent connections from one network closed at once, want 22 (8 may wait)", closed)
	}
	cfg := store(t, dir, "voter-2", Options{}).ClientConfig(Peer{Roles: []string{RoleControl}, SkipHostname: true})
	if err := roundTrip(addr, cfg); err != nil {
		t.Fatalf("a voter from another network while one holds its handshakes: %v", err)
	}
	if _, refused, _ := ln.Counts(); refused != 22 {
		t.Errorf("refused %d, want 22", refused)
	}
}

// TestListenerLimitsLeaveRoom: one network's handshakes stay below the listener's, so that
// one network cannot take every slot.
func TestListenerLimitsLeaveRoom(t *testing.T) {
	for _, c := range []struct{ in, want ListenerLimits }{
		{ListenerLimits{}, ListenerLimits{MaxHandshakes: DefaultMaxHandshakes, MaxHandshakesPerSource: DefaultMaxHandshakesPerSource}},
		{ListenerLimits{MaxHandshakes: 8, MaxHandshakesPerSource: 8}, ListenerLimits{MaxHandshakes: 8, MaxHandshakesPerSource: 7}},
		{ListenerLimits{MaxHandshakes: 8}, ListenerLimits{MaxHandshakes: 8, MaxHandshakesPerSource: 7}},
		{ListenerLimits{MaxHandshakes: 1}, ListenerLimits{MaxHandshakes: 1, MaxHandshakesPerSource: DefaultMaxHandshakesPerSource}},
	} {
		got := c.in.withDefaults()
		if got.MaxHandshakes != c.want.MaxHandshakes || got.MaxHandshakesPerSource != c.want.MaxHandshakesPerSource {
			t.Errorf("%+v: %d in all, %d per network; want %d and %d", c.in, got.MaxHandshakes, got.MaxHandshakesPerSource, c.want.MaxHandshakes, c.want.MaxHandshakesPerSource)
		}
	}
}
