package control

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vigil-dns/vigil/control/state"
)

// TestPartitionedLeader cuts the leader off from the two other voters (raft's InmemTransport
// with Disconnect, both ways): the majority elects a new leader within 3 s and takes writes;
// the old leader, alone, refuses writes with a clear error and marks its reads stale; once
// healed it has the majority's writes and never the refused one.
func TestPartitionedLeader(t *testing.T) {
	type member struct {
		node  *Server
		trans *raft.InmemTransport
		url   string
	}
	ms := make([]*member, 3)
	for i := range ms {
		_, trans := raft.NewInmemTransport("")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		m := &member{trans: trans, url: "http://" + ln.Addr().String()}
		m.node, err = NewServer(ServerConfig{
			ID: fmt.Sprintf("p%d", i), DataDir: filepath.Join(t.TempDir(), "data"), Transport: trans,
			APIURL: m.url, Timing: testTiming, Logger: testLogger(t),
		})
		if err != nil {
			t.Fatal(err)
		}
		api, err := NewAPI(APIConfig{Node: m.node, WriteTokens: []string{testToken}, OpenReads: true, StaleAfter: time.Second, LeaderWait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close(); m.node.Close() })
		ms[i] = m
	}
	for _, a := range ms {
		for _, b := range ms {
			if a != b {
				a.trans.Connect(b.trans.LocalAddr(), b.trans)
			}
		}
	}
	if err := ms[0].node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "p0 to lead", ms[0].node.IsLeader)
	for _, m := range ms[1:] {
		if _, err := ms[0].node.AddVoter(state.Voter{ID: m.node.ID(), API: m.url}, string(m.trans.LocalAddr())); err != nil {
			t.Fatal(err)
		}
	}
	idx := mustWrite(t, "PUT", ms[1].url+"/v1/document", "application/yaml", testDoc)
	waitFor(t, 5*time.Second, "every voter to apply the document", func() bool {
		for _, m := range ms {
			if m.node.State().Index < idx {
				return false
			}
		}
		return true
	})

	old := ms[0]
	for _, m := range ms[1:] {
		old.trans.Disconnect(m.trans.LocalAddr())
		m.trans.Disconnect(old.trans.LocalAddr())
	}
	cut := time.Now()
	var nl *member
	waitFor(t, 3*time.Second, "a new leader on the majority side", func() bool {
		for _, m := range ms[1:] {
			if m.node.IsLeader() {
				nl = m
				return true
			}
		}
		return false
	})
	t.Logf("new leader %s %v after the cut", nl.node.ID(), time.Since(cut))
	other := ms[1]
	if other == nl {
		other = ms[2]
	}
	majorityIdx := mustWrite(t, "POST", other.url+"/v1/checks", "application/json", checkJSON("majority", 9300))

	waitFor(t, 3*time.Second, "the old leader to step down", func() bool { return !old.node.IsLeader() })
	code, out := do(t, "POST", old.url+"/v1/checks", testToken, "application/json", checkJSON("minority", 9301))
	if code != http.StatusServiceUnavailable {
		t.Fatalf("write on the minority side: %d %s, want 503", code, out)
	}
	if e := decodeError(t, out); !strings.Contains(e.Error, "majority") && !strings.Contains(e.Error, "may or may not") {
		t.Fatalf("unclear error on the minority side: %q", e.Error)
	}
	meta, s := readStateAPI(t, old.url, "")
	if !meta.Stale {
		t.Fatalf("minority read not marked stale: %+v", meta)
	}
	if _, ok := s.Check("majority"); ok {
		t.Fatal("the minority sees a write it cannot have")
	}

	for _, m := range ms[1:] {
		old.trans.Connect(m.trans.LocalAddr(), m.trans)
		m.trans.Connect(old.trans.LocalAddr(), old.trans)
	}
	waitFor(t, 10*time.Second, "the old leader to catch up after the heal", func() bool {
		s := old.node.State()
		_, ok := s.Check("majority")
		return ok && s.Index >= majorityIdx
	})
	for _, m := range ms {
		if _, ok := m.node.State().Check("minority"); ok {
			t.Fatalf("%s applied the refused write", m.node.ID())
		}
	}
}
