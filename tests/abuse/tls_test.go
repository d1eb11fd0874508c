package abuse

import (
	"crypto/tls"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// pkiSet is a CA with its node certificates, another CA's voter, and an expired certificate
// of the first CA.
type pkiSet struct {
	dir, other string
}

func newPKI(t *testing.T) pkiSet {
	t.Helper()
	p := pkiSet{dir: t.TempDir(), other: t.TempDir()}
	now := time.Now()
	req := func(name, role string) tlsconf.Request {
		return tlsconf.Request{Name: name, Roles: []string{role}, Hosts: []string{"127.0.0.1", "localhost"}}
	}
	for _, step := range []struct {
		dir  string
		reqs []tlsconf.Request
		now  time.Time
	}{
		{p.dir, []tlsconf.Request{req("v0", "control"), req("v1", "control"), req("checker", "checker"), req("op", "operator"), req("loc", "location")}, now},
		{p.dir, []tlsconf.Request{req("expired", "control"), req("expired-op", "operator")}, now.Add(-3 * time.Hour)},
		{p.other, []tlsconf.Request{req("evil", "control"), req("evil-op", "operator")}, now},
	} {
		if _, err := tlsconf.Init(step.dir, step.reqs, tlsconf.InitOptions{Now: step.now, CAValid: 24 * time.Hour, CertValid: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// store loads name's certificate from dir with the CA of caDir.
func (p pkiSet) store(t *testing.T, dir, name string) *tlsconf.Store {
	t.Helper()
	s, err := tlsconf.Load(tlsconf.Files{Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem"), CA: filepath.Join(p.dir, "ca.pem")}, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// attacker returns a TLS client config that presents name's certificate (from dir) and
// trusts any server: the attacker cares only whether the voter accepts it.
func attacker(t *testing.T, dir, name string) *tls.Config {
	t.Helper()
	c, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{c}, InsecureSkipVerify: true} //nolint:gosec // the attacker's side
}

// rawStream is a raft stream layer that dials with cfg, or in plaintext when cfg is nil.
type rawStream struct {
	net.Listener
	cfg *tls.Config
}

func (s *rawStream) Dial(a raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if s.cfg == nil {
		return net.DialTimeout("tcp", string(a), timeout)
	}
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(a), s.cfg)
}

// raftClient is a raft transport that speaks to the voter through s's dialling.
func raftClient(t *testing.T, cfg *tls.Config) *raft.NetworkTransport {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransport(&rawStream{Listener: ln, cfg: cfg}, 1, 2*time.Second, io.Discard)
	t.Cleanup(func() { tr.Close() })
	return tr
}

func termOf(n *control.Server) uint64 {
	v, _ := strconv.ParseUint(n.Stats()["term"], 10, 64)
	return v
}

// attempt sends a vote request and an append request with a term far ahead; it reports
// how many raft answered.
func attempt(tr *raft.NetworkTransport, target string, term uint64) int {
	h := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte(tr.LocalAddr())}
	answered := 0
	var vr raft.RequestVoteResponse
	if tr.RequestVote("v0", raft.ServerAddress(target), &raft.RequestVoteRequest{RPCHeader: h, Term: term, LastLogIndex: 1 << 40, LastLogTerm: term}, &vr) == nil {
		answered++
	}
	var ar raft.AppendEntriesResponse
	if tr.AppendEntries("v0", raft.ServerAddress(target), &raft.AppendEntriesRequest{RPCHeader: h, Term: term, LeaderCommitIndex: 1 << 40}, &ar) == nil {
		answered++
	}
	return answered
}

// TestAbuseRaftTLS: a voter whose raft transport runs on mutual TLS is sent vote and append
// requests with a term 1,000 ahead, which would depose it, by clients without a certificate,
// with one of another CA, an expired one of its CA, one of its CA without the control role,
// and in plaintext; then, as the control, by a voter of its CA.
func TestAbuseRaftTLS(t *testing.T) {
	p := newPKI(t)
	reg := prometheus.NewRegistry()
	st := p.store(t, p.dir, "v0")
	m, err := tlsconf.NewMetrics(reg, st)
	if err != nil {
		t.Fatal(err)
	}
	n, err := control.NewServer(control.ServerConfig{
		ID: "v0", DataDir: filepath.Join(t.TempDir(), "control"), RaftAddr: "127.0.0.1:0", RaftTLS: st, TLSMetrics: m,
		Timing: control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond},
		Logger: logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(10*time.Second, n.IsLeader) {
		t.Fatal("the voter did not lead")
	}
	target := n.RaftAddr()
	const tries = 25
	for _, a := range []struct {
		row string
		cfg *tls.Config
	}{
		{"raft from a node without a certificate (TLS, none presented)", &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // the attacker's side
		{"raft with a certificate of another CA (role control)", attacker(t, p.other, "evil")},
		{"raft with an expired certificate of the voters' CA (role control, expired 1h59m ago)", attacker(t, p.dir, "expired")},
		{"raft with a certificate of the voters' CA without the control role (a checker's)", attacker(t, p.dir, "checker")},
		{"plaintext raft to the TLS raft port (raft's own TCP protocol)", nil},
	} {
		tr := raftClient(t, a.cfg)
		before := termOf(n)
		through := 0
		for range tries {
			through += attempt(tr, target, before+1000)
		}
		after := termOf(n)
		row(t, a.row+": vote and append requests with a term 1,000 ahead", plural(2*tries, "request"),
			itoa(through)+" answered by raft; term "+itoa(int(before))+" before, "+itoa(int(after))+" after; still leader: "+strconv.FormatBool(n.IsLeader()))
		if through != 0 || after != before {
			t.Errorf("%s: %d requests answered, term %d → %d", a.row, through, before, after)
		}
	}
	_, refused, failed := counts(t, reg)
	// The control: a voter of the CA is answered, and its term deposes the leader.
	tr := raftClient(t, p.store(t, p.dir, "v1").ClientConfig(tlsconf.Peer{Roles: []string{tlsconf.RoleControl}, SkipHostname: true}))
	before := termOf(n)
	through := 0
	for range tries {
		through += attempt(tr, target, before+1000)
	}
	t.Logf("handshakes failed %d, refused over the limits %d; control, a voter of the CA: %d of %d answered, term %d → %d",
		failed, refused, through, 2*tries, before, termOf(n))
	if through != 2*tries || termOf(n) <= before {
		t.Errorf("control: %d of %d answered, term %d → %d", through, 2*tries, before, termOf(n))
	}
	if failed < 4*2*tries {
		t.Errorf("vigil_tls_handshakes_failed_total %d, want at least %d", failed, 4*2*tries)
	}
}

// counts returns the TLS counters of reg: the expiry of the node's certificate, refused and
// failed.
func counts(t *testing.T, reg *prometheus.Registry) (expiry float64, refused, failed int) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "vigil_tls_connections_refused_total":
				refused += int(m.GetCounter().GetValue())
			case "vigil_tls_handshakes_failed_total":
				failed += int(m.GetCounter().GetValue())
			case "vigil_tls_certificate_expiry_timestamp_seconds":
				if m.GetLabel()[0].GetValue() == "node" {
					expiry = m.GetGauge().GetValue()
				}
			}
		}
	}
	return expiry, refused, failed
}
