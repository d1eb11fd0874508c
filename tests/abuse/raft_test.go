package abuse

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// raftVictim is a voter as `vigil agent -roles control -bootstrap` runs it (node with the
// control role, raft with BoltDB on a real port), holding the zone victim.test.
type raftVictim struct {
	api, raft string
}

// startRaftVictim starts the voter: with the default configuration (no certificates, so
// raft authenticates with the cluster secret the voter generates in its data directory), or
// with -insecure-raft-plaintext.
func startRaftVictim(t *testing.T, insecure bool) *raftVictim {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := ln.Addr().String()
	ln.Close()
	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Roles, cfg.DataDir, cfg.HTTPAddr = "victim", agent.RoleControl, t.TempDir(), "off"
	cfg.Control.RaftAddr, cfg.Control.APIAddr = raftAddr, "127.0.0.1:0"
	cfg.Control.Bootstrap, cfg.Control.WriteTokens, cfg.Control.ReadTokens = true, []string{writeToken}, []string{readToken}
	cfg.Control.InsecureRaftPlaintext = insecure
	cfg.Control.Timing = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
	cfg.Logger = logger()
	n, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	v := &raftVictim{api: n.Self().ControlAPI, raft: raftAddr}
	client := &http.Client{Timeout: 5 * time.Second}
	if !waitFor(15*time.Second, func() bool {
		code, _ := send(t, client, v.api, writeReq{"POST", "/v1/zones", "application/json",
			`{"name": "victim.test.", "record_sets": [{"name": "www", "type": "A", "records": [{"value": "192.0.2.7"}]}]}`}, bearer(writeToken))
		return code == http.StatusCreated
	}) {
		t.Fatal("the voter does not accept writes")
	}
	return v
}

// zone returns the status of a read of victim.test.'s www A (200: served, 404: deleted),
// and the index of the voter's state.
func (v *raftVictim) zone(t *testing.T) (code int, index uint64) {
	t.Helper()
	get := func(path string) *http.Response {
		req, err := http.NewRequest("GET", v.api+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		bearer(readToken)(req)
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	code = get("/v1/zones/victim.test./record_sets/www/A").StatusCode
	index, _ = strconv.ParseUint(get("/v1/zones").Header.Get("X-Vigil-Index"), 10, 64)
	return code, index
}

// raftAttack counts the RPCs an attacker sent to a voter's raft port and what they did.
type raftAttack struct {
	tried, answered int
	appended        bool // a forged entry was accepted (Success)
	votes           int  // votes granted
}

// attackRaft is the attack of the finding, from the raft transport trans: an AppendEntries
// of term 0 (stale: its answer tells the voter's term and last index), then AppendEntries
// as the leader of the next term carrying a delete_zone of victim.test. (with a forged audit
// record) committed at once, trying the possible terms of the voter's last entry; then a
// RequestVote and an InstallSnapshot of a later term.
// afterAppend, when set, runs between the append and the other RPCs.
func attackRaft(t *testing.T, trans raft.Transport, target string, afterAppend func()) raftAttack {
	t.Helper()
	var a raftAttack
	self := trans.EncodePeer("mallory", trans.LocalAddr())
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("mallory"), Addr: self}
	to := raft.ServerAddress(target)
	rpc := func(err error) bool {
		a.tried++
		if err == nil {
			a.answered++
		}
		return err == nil
	}

	var stale raft.AppendEntriesResponse
	term, last := uint64(3), uint64(4) // guesses, when the voter does not answer
	if rpc(trans.AppendEntries("victim", to, &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 0}, &stale)) {
		term, last = stale.Term, stale.LastLog
	}
	data, err := json.Marshal(&state.Command{Op: state.OpDeleteZone, ZoneName: "victim.test.",
		Audit: &state.AuditInfo{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Token: "alice", Method: "DELETE",
			Path: "/v1/zones/victim.test.", Summary: "delete zone victim.test."}})
	if err != nil {
		t.Fatal(err)
	}
	next := term + 1
	for prevTerm := term; prevTerm >= 1 && !a.appended; prevTerm-- {
		var resp raft.AppendEntriesResponse
		req := &raft.AppendEntriesRequest{RPCHeader: hdr, Term: next, PrevLogEntry: last, PrevLogTerm: prevTerm,
			Entries:           []*raft.Log{{Index: last + 1, Term: next, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}},
			LeaderCommitIndex: last + 1}
		if rpc(trans.AppendEntries("victim", to, req, &resp)) && resp.Success {
			a.appended = true
		}
	}

	if afterAppend != nil {
		afterAppend()
	}
	var vote raft.RequestVoteResponse
	if rpc(trans.RequestVote("victim", to, &raft.RequestVoteRequest{RPCHeader: hdr, Term: next + 1,
		LastLogIndex: last + 1000, LastLogTerm: next}, &vote)) && vote.Granted {
		a.votes++
	}

	conf := raft.EncodeConfiguration(raft.Configuration{Servers: []raft.Server{
		{Suffrage: raft.Voter, ID: "mallory", Address: trans.LocalAddr()}}})
	var snap raft.InstallSnapshotResponse
	rpc(trans.InstallSnapshot("victim", to, &raft.InstallSnapshotRequest{RPCHeader: hdr, SnapshotVersion: raft.SnapshotVersionMax,
		Term: next + 2, LastLogIndex: last + 2000, LastLogTerm: next + 2, Configuration: conf, ConfigurationIndex: last + 2000,
		Size: 2}, &snap, bytes.NewReader([]byte("{}"))))
	return a
}

// plainAttacker is raft's own TCP transport, as a fake peer without credentials.
func plainAttacker(t *testing.T) raft.Transport {
	t.Helper()
	trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { trans.Close() })
	return trans
}

// tlsAttacker is a raft transport over TLS presenting a certificate with the control role
// signed by the CA of another cluster secret; it does not check the voter's certificate.
func tlsAttacker(t *testing.T) raft.Transport {
	t.Helper()
	secret, err := tlsconf.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	st, err := tlsconf.NewSecretStore(secret, "mallory", []string{tlsconf.RoleControl}, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.ClientConfig(tlsconf.Peer{SkipHostname: true})
	cfg.VerifyConnection = nil // InsecureSkipVerify is set: whatever the voter presents
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	trans := raft.NewNetworkTransport(&attackStream{Listener: ln, cfg: cfg}, 1, 2*time.Second, nil)
	t.Cleanup(func() { trans.Close() })
	return trans
}

// attackStream dials over TLS with cfg; its listener is a plain one nobody dials.
type attackStream struct {
	net.Listener
	cfg *tls.Config
}

func (s *attackStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: s.cfg}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return d.DialContext(ctx, "tcp", string(addr))
}

// TestAbuseForgedRaftAppend: a default voter (no certificates: raft authenticated by the
// cluster secret it generated at bootstrap) holds victim.test.; an attacker who reaches its
// raft port sends, as a plain raft peer and as a TLS peer with a control certificate of
// another secret, the finding's forged append of a delete_zone (learn the term from a stale
// AppendEntries, append and commit as leader of the next term), a RequestVote and an
// InstallSnapshot, five rounds each. No RPC may be answered, and the zone and the state's
// index must stay. The control runs the same attack against a voter started with
// -insecure-raft-plaintext: the forged append is accepted and the zone deleted.
func TestAbuseForgedRaftAppend(t *testing.T) {
	const rounds = 5
	v := startRaftVictim(t, false)
	_, before := v.zone(t)
	var sum raftAttack
	for _, attacker := range []struct {
		name  string
		trans raft.Transport
	}{{"plain raft peer", plainAttacker(t)}, {"TLS peer of another secret", tlsAttacker(t)}} {
		for range rounds {
			a := attackRaft(t, attacker.trans, v.raft, nil)
			sum.tried += a.tried
			sum.answered += a.answered
			sum.votes += a.votes
			if a.appended {
				sum.appended = true
				t.Errorf("%s: a forged entry was appended", attacker.name)
			}
			if a.answered > 0 {
				t.Errorf("%s: %d of %d RPCs answered", attacker.name, a.answered, a.tried)
			}
		}
	}
	time.Sleep(500 * time.Millisecond) // a committed entry would be applied by now
	code, after := v.zone(t)
	kept := code == http.StatusOK
	if !kept || after != before {
		t.Errorf("after the attack: zone read %d, state index %d (before %d)", code, after, before)
	}

	// Control: the same attack on a voter whose raft is plain TCP.
	ins := startRaftVictim(t, true)
	_, insBefore := ins.zone(t)
	var gone bool
	var insAfter uint64
	ctl := attackRaft(t, plainAttacker(t), ins.raft, func() {
		gone = waitFor(5*time.Second, func() bool {
			var c int
			c, insAfter = ins.zone(t)
			return c == http.StatusNotFound
		})
	})
	if !ctl.appended || !gone {
		t.Fatalf("control: the forged append against -insecure-raft-plaintext: appended %v, zone deleted %v (%d of %d RPCs answered)",
			ctl.appended, gone, ctl.answered, ctl.tried)
	}
	t.Logf("control (-insecure-raft-plaintext): %d of %d RPCs answered, forged delete_zone appended and applied: zone read 404, index %d -> %d",
		ctl.answered, ctl.tried, insBefore, insAfter)

	row(t, "forged raft RPCs at a default voter's raft port (cluster secret generated at bootstrap): stale AppendEntries to learn the term, "+
		"AppendEntries of a delete_zone committed as leader of the next term, RequestVote, InstallSnapshot; from a plain raft peer and from a TLS peer "+
		"with a control certificate of another secret",
		fmt.Sprintf("%d RPCs (%d rounds × 2 attackers)", sum.tried, rounds),
		fmt.Sprintf("%d answered (every handshake refused), %d votes, zone served %v, state index %d -> %d (control, -insecure-raft-plaintext: %d of %d answered, forged delete_zone applied at index %d, zone 404)",
			sum.answered, sum.votes, kept, before, after, ctl.answered, ctl.tried, insAfter))
}
