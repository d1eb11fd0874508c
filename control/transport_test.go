package control

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// answerVotes serves trans's RPCs: every RequestVote is answered with term 7.
func answerVotes(t *testing.T, trans raft.Transport) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case rpc := <-trans.Consumer():
				rpc.Respond(&raft.RequestVoteResponse{Term: 7}, nil)
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(done)
		wg.Wait()
	})
}

// testTransport starts cfg's raft transport on a free loopback port, answering votes.
func testTransport(t *testing.T, cfg ServerConfig, log *slog.Logger) raft.Transport {
	t.Helper()
	cfg.RaftAddr = "127.0.0.1:0"
	if log == nil {
		log = testLogger(t)
	}
	trans, err := newRaftTransport(cfg, hclog.NewNullLogger(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeTrans(trans) })
	answerVotes(t, trans)
	return trans
}

func closeTrans(trans raft.Transport) {
	if c, ok := trans.(raft.WithClose); ok {
		_ = c.Close()
	}
}

// askVote sends a RequestVote from one transport to another and returns the term answered.
func askVote(from, to raft.Transport) (uint64, error) {
	var resp raft.RequestVoteResponse
	err := from.RequestVote("x", to.LocalAddr(), &raft.RequestVoteRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}, Term: 1,
	}, &resp)
	return resp.Term, err
}

// TestRaftSecretTransport: two voters with the same cluster secret speak raft; a voter with
// another secret, and a plain TCP peer, cannot (the handshake fails before raft sees a byte).
func TestRaftSecretTransport(t *testing.T) {
	secret := testRaftSecret(t)
	a := testTransport(t, ServerConfig{ID: "a", RaftSecret: secret}, nil)
	b := testTransport(t, ServerConfig{ID: "b", RaftSecret: secret}, nil)
	if term, err := askVote(a, b); err != nil || term != 7 {
		t.Fatalf("same secret: term %d, err %v; want the answer 7", term, err)
	}
	if term, err := askVote(b, a); err != nil || term != 7 {
		t.Fatalf("same secret, other way: term %d, err %v; want the answer 7", term, err)
	}

	other := testTransport(t, ServerConfig{ID: "c", RaftSecret: testRaftSecret(t)}, nil)
	if term, err := askVote(other, a); err == nil {
		t.Fatalf("another secret got through to a: term %d", term)
	}
	if term, err := askVote(a, other); err == nil {
		t.Fatalf("a got an answer from a voter of another secret: term %d", term)
	}

	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if term, err := askVote(plain, a); err == nil {
		t.Fatalf("a plain TCP peer got through: term %d", term)
	}
}

// TestRaftTransportNeedsCredentials: a voter without certificates, a secret or the insecure
// flag does not start, nor with several of them or a secret of the wrong size.
func TestRaftTransportNeedsCredentials(t *testing.T) {
	cases := []struct {
		name string
		cfg  ServerConfig
		want string
	}{
		{"none", ServerConfig{ID: "v"}, "-raft-secret-file"},
		{"secret and insecure", ServerConfig{ID: "v", RaftSecret: testRaftSecret(t), InsecureRaftPlaintext: true}, "not several"},
		{"short secret", ServerConfig{ID: "v", RaftSecret: []byte("short")}, "32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.RaftAddr = "127.0.0.1:0"
			trans, err := newRaftTransport(c.cfg, hclog.NewNullLogger(), testLogger(t))
			if err == nil {
				closeTrans(trans)
				t.Fatal("the transport started")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
	_, err := NewServer(ServerConfig{ID: "v", DataDir: t.TempDir(), RaftAddr: "127.0.0.1:0"})
	if !errors.Is(err, ErrNoRaftCredentials) {
		t.Fatalf("NewServer without credentials: %v, want ErrNoRaftCredentials", err)
	}
}

// TestInsecureRaftPlaintextWarns: the development flag runs plain TCP, which a peer without
// credentials reaches (the control of TestRaftSecretTransport), and says so at start.
func TestInsecureRaftPlaintextWarns(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	a := testTransport(t, ServerConfig{ID: "a", InsecureRaftPlaintext: true}, log)
	out := buf.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "INSECURE") {
		t.Fatalf("no warning at start; the log was:\n%s", out)
	}
	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if term, err := askVote(plain, a); err != nil || term != 7 {
		t.Fatalf("plain peer to an insecure voter: term %d, err %v; want the answer 7", term, err)
	}

	buf.Reset()
	testTransport(t, ServerConfig{ID: "b", RaftSecret: testRaftSecret(t)}, log)
	if strings.Contains(buf.String(), "INSECURE") {
		t.Fatalf("a voter with a secret warns of plain raft:\n%s", buf.String())
	}
}

// TestRaftAdvertiseName: a voter that advertises a DNS name keeps it as its address (the
// cluster's configuration holds the name, not the IP it resolved to at start), and a peer
// reaches it by that name. Addresses other voters cannot dial are refused at start.
func TestRaftAdvertiseName(t *testing.T) {
	secret := testRaftSecret(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	named := fmt.Sprintf("localhost:%d", port)
	b, err := newRaftTransport(ServerConfig{ID: "b", RaftSecret: secret, RaftAddr: fmt.Sprintf("127.0.0.1:%d", port), RaftAdvertise: named},
		hclog.NewNullLogger(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeTrans(b) })
	answerVotes(t, b)
	if got := string(b.LocalAddr()); got != named {
		t.Fatalf("advertised %q, want the name %q", got, named)
	}
	a := testTransport(t, ServerConfig{ID: "a", RaftSecret: secret}, nil)
	if term, err := askVote(a, b); err != nil || term != 7 {
		t.Fatalf("vote through the name %s: term %d, err %v; want the answer 7", named, term, err)
	}

	for _, c := range []struct{ adv, want string }{
		{"0.0.0.0:7000", "unspecified"},
		{":7000", "a host"},
		{"voter-0.voters:0", "port other than 0"},
		{"voter-0.voters", "missing port"},
	} {
		trans, err := newRaftTransport(ServerConfig{ID: "v", RaftSecret: secret, RaftAddr: "127.0.0.1:0", RaftAdvertise: c.adv}, hclog.NewNullLogger(), testLogger(t))
		if err == nil {
			closeTrans(trans)
			t.Errorf("advertise %q: the transport started", c.adv)
		} else if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "give") {
			t.Errorf("advertise %q: error %q does not say %q and what to give", c.adv, err, c.want)
		}
	}
	_, err = newRaftTransport(ServerConfig{ID: "v", InsecureRaftPlaintext: true, RaftAddr: "127.0.0.1:0", RaftAdvertise: "voter-0:7000"}, hclog.NewNullLogger(), testLogger(t))
	if err == nil || !strings.Contains(err.Error(), "-raft-secret-file") {
		t.Errorf("plain raft with an advertised name: %v, want a refusal naming -raft-secret-file", err)
	}
}
