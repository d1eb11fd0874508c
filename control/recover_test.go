package control

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRecoverLostMajority: a three-voter cluster loses two voters for good; the third, made
// the only voter by Recover, starts without -bootstrap, elects itself with every write it
// held, takes writes, and lets the lost voters be removed and a new one join. Without
// Recover the same voter alone never elects itself (the control).
func TestRecoverLostMajority(t *testing.T) {
	c := newCluster(t, 3)
	l := c.leader(5 * time.Second)
	idx := mustWrite(t, "PUT", l.url()+"/v1/document", "application/yaml", testDoc)
	for i := range c.voters {
		waitFor(t, 5*time.Second, "every voter applies the document", func() bool {
			return c.voters[i].node.State().Index >= idx
		})
	}
	for i := range c.voters {
		c.stop(i)
	}
	keep := c.voters[2]

	// The control: alone, with the old configuration, it cannot elect itself.
	c.start(2)
	time.Sleep(10 * testTiming.Election)
	if keep.node.IsLeader() {
		t.Fatal("a voter of three elected itself alone: the control of this test is broken")
	}
	if _, err := Recover(RecoverConfig{DataDir: keep.dir, ID: keep.id, RaftAddr: keep.raftAddr}); err == nil {
		t.Fatal("Recover ran on the data directory of a running voter")
	} else if !strings.Contains(err.Error(), "stop it first") {
		t.Fatalf("Recover on a running voter: %v, want a hint to stop it", err)
	}
	c.stop(2)

	res, err := Recover(RecoverConfig{DataDir: keep.dir, ID: keep.id, RaftAddr: keep.raftAddr})
	if err != nil {
		t.Fatal(err)
	}
	if res.Index < idx || len(res.Voters) != 3 {
		t.Fatalf("recovered index %d (want >= %d), voters %v (want the three)", res.Index, idx, res.Voters)
	}
	c.start(2)
	if got := c.leader(10 * time.Second); got != keep {
		t.Fatalf("leader %s after recovery, want %s", got.id, keep.id)
	}
	n := 0
	for range keep.node.State().Checks() {
		n++
	}
	if n != 2 {
		t.Fatalf("recovered state holds %d checks, want the document's 2", n)
	}
	for _, gone := range c.voters[:2] {
		mustWrite(t, "DELETE", keep.url()+"/v1/cluster/voters/"+gone.id, "", "")
	}
	if v := keep.node.State().Voters; len(v) != 1 {
		t.Fatalf("voters after removing the lost ones: %v", v)
	}
	mustWrite(t, "PUT", keep.url()+"/v1/checks/web-3", "application/json", checkJSON("web-3", 8083))

	// A new voter joins the recovered one.
	nv := &voter{id: "v9", dir: filepath.Join(t.TempDir(), "data"), raftAddr: freeAddr(t), apiAddr: freeAddr(t)}
	c.voters = append(c.voters, nv)
	c.start(len(c.voters) - 1)
	body := fmt.Sprintf(`{"id": %q, "raft_address": %q, "api": %q}`, nv.id, nv.raftAddr, nv.url())
	if code, out := doWith(t, c.client, "POST", keep.url()+"/v1/cluster/voters", testToken, "application/json", body); code != http.StatusOK {
		t.Fatalf("join after recovery: %d %s", code, out)
	}
	want := keep.node.State().Index
	waitFor(t, 10*time.Second, "the new voter catches up", func() bool { return nv.node.State().Index >= want })
}

// TestRecoverRefusals: Recover changes nothing without a log, and names what is missing.
func TestRecoverRefusals(t *testing.T) {
	dir := t.TempDir()
	_, err := Recover(RecoverConfig{DataDir: dir, ID: "v0", RaftAddr: "127.0.0.1:7000"})
	if err == nil || !strings.Contains(err.Error(), "holds no raft log") {
		t.Fatalf("Recover of an empty directory: %v", err)
	}
	if _, err := Recover(RecoverConfig{DataDir: dir}); err == nil {
		t.Fatal("Recover without an id and address succeeded")
	}
}
