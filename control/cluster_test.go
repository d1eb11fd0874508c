package control

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestClusterWritesFailoverCatchUp: three voters; writes through a follower land on every
// voter; the leader killed, a new one is elected within 3 s and no acknowledged write is lost;
// the old leader restarted from its data directory catches up.
func TestClusterWritesFailoverCatchUp(t *testing.T) {
	c := newCluster(t, 3)
	l := c.leader(5 * time.Second)
	f := c.follower()

	idx := mustWrite(t, "PUT", f.url()+"/v1/document", "application/yaml", testDoc)
	acked := map[string]uint64{}
	for i := range 10 {
		id := fmt.Sprintf("extra-%d", i)
		acked[id] = mustWrite(t, "POST", f.url()+"/v1/checks", "application/json", checkJSON(id, 9000+i))
	}
	if acked["extra-9"] <= idx {
		t.Fatalf("indexes do not grow: document %d, last check %d", idx, acked["extra-9"])
	}
	for _, v := range c.voters {
		_, s := readStateAPI(t, v.url(), fmt.Sprintf("?index=%d&wait=5s", acked["extra-9"]-1))
		if s.Index < acked["extra-9"] {
			t.Fatalf("%s: index %d after a blocking read past %d", v.id, s.Index, acked["extra-9"]-1)
		}
		for id := range acked {
			if _, ok := s.Check(id); !ok {
				t.Fatalf("%s lacks check %s", v.id, id)
			}
		}
		if got := s.Shards()["example.test."]; len(got) != 4 {
			t.Fatalf("%s: zone shard %v, want 4 servers", v.id, got)
		}
	}

	// Kill the leader; a new one within 3 s.
	old := -1
	for i, v := range c.voters {
		if v == l {
			old = i
		}
	}
	c.stop(old)
	killed := time.Now()
	nl := c.leader(3 * time.Second)
	t.Logf("new leader %s after %v", nl.id, time.Since(killed))
	for id := range acked {
		if _, ok := nl.node.State().Check(id); !ok {
			t.Fatalf("acknowledged check %s lost after failover", id)
		}
	}
	// Writes go on through the survivors.
	after := mustWrite(t, "POST", c.follower().url()+"/v1/checks", "application/json", checkJSON("after-failover", 9100))

	// The old leader comes back and catches up.
	c.start(old)
	waitFor(t, 10*time.Second, "the restarted voter to catch up", func() bool {
		v := c.voters[old].node
		_, ok := v.State().Check("after-failover")
		return v.Ready() && ok && v.State().Index >= after
	})
}

// TestMinorityRejectsWrites: with the majority down, the last voter refuses writes with a
// clear error and says its reads may be stale.
func TestMinorityRejectsWrites(t *testing.T) {
	c := newCluster(t, 3)
	c.leader(5 * time.Second)
	idx := mustWrite(t, "PUT", c.voters[0].url()+"/v1/document", "application/yaml", testDoc)
	lone := c.voters[2]
	waitFor(t, 5*time.Second, "the last voter to apply the document", func() bool { return lone.node.State().Index >= idx })
	c.stop(0)
	c.stop(1)
	waitFor(t, 5*time.Second, "the lone voter to lose its leader", func() bool {
		id, _ := lone.node.Leader()
		return id == "" && !lone.node.IsLeader()
	})
	code, out := do(t, "POST", lone.url()+"/v1/checks", testToken, "application/json", checkJSON("lost", 9200))
	if code != http.StatusServiceUnavailable {
		t.Fatalf("write on the minority: %d %s, want 503", code, out)
	}
	if e := decodeError(t, out); !strings.Contains(e.Error, "majority") {
		t.Fatalf("unclear error: %q", e.Error)
	}
	meta, s := readStateAPI(t, lone.url(), "")
	if !meta.Stale || meta.KnownLeader {
		t.Fatalf("minority read: %+v, want stale without a known leader", meta)
	}
	if _, ok := s.Check("lost"); ok || s.Index != idx {
		t.Fatalf("the rejected write shows up: index %d, want %d", s.Index, idx)
	}
	code, out = do(t, "GET", lone.url()+"/v1/state?consistent", "", "", "")
	if code != http.StatusServiceUnavailable {
		t.Fatalf("linearizable read on the minority: %d %s, want 503", code, out)
	}
}

// TestVoterRemoval: a voter removed from the cluster leaves the raft configuration and the
// state's voter list, and the cluster keeps accepting writes.
func TestVoterRemoval(t *testing.T) {
	c := newCluster(t, 3)
	l := c.leader(5 * time.Second)
	var gone *voter
	for _, v := range c.voters {
		if v != l {
			gone = v
			break
		}
	}
	mustWrite(t, "DELETE", c.follower().url()+"/v1/cluster/voters/"+gone.id, "", "")
	servers, err := l.node.Servers()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := servers[gone.id]; ok || len(servers) != 2 {
		t.Fatalf("servers after removal: %v", servers)
	}
	if _, ok := l.node.State().Voters[gone.id]; ok {
		t.Fatalf("removed voter still recorded: %v", l.node.State().Voters)
	}
	mustWrite(t, "PUT", l.url()+"/v1/document", "application/yaml", testDoc)
	code, _ := do(t, "DELETE", l.url()+"/v1/cluster/voters/nobody", testToken, "", "")
	if code != http.StatusNotFound {
		t.Fatalf("removing an unknown voter: %d, want 404", code)
	}
}

// TestCatchUpFromSnapshot: a voter that was down while the leader compacted its log past
// what the voter has catches up from the leader's snapshot, shards included; with the log in
// the write-ahead log (in files of 4 KiB, so that the compacted entries are gone from the
// disk, and in files of the default size, so that they are still in the open file, which
// raft-wal v0.4.0 reads them from: walStore.GetLog) and in BoltDB.
func TestCatchUpFromSnapshot(t *testing.T) {
	t.Run("wal", func(t *testing.T) {
		testCatchUpFromSnapshot(t, &cluster{maxBody: 1 << 20, timing: testTiming, snapshotThreshold: 4, walSegment: 4 << 10})
	})
	t.Run("wal open segment", func(t *testing.T) {
		testCatchUpFromSnapshot(t, &cluster{maxBody: 1 << 20, timing: testTiming, snapshotThreshold: 4, walSegment: defaultWALSegment})
	})
	t.Run("bolt", func(t *testing.T) {
		testCatchUpFromSnapshot(t, &cluster{maxBody: 1 << 20, timing: testTiming, snapshotThreshold: 4})
	})
}

func testCatchUpFromSnapshot(t *testing.T, c *cluster) {
	c = newClusterWith(t, 3, c)
	l := c.leader(5 * time.Second)
	mustWrite(t, "PUT", l.url()+"/v1/document", "application/yaml", testDoc)
	down := -1
	for i, v := range c.voters {
		if v != l {
			down = i
			break
		}
	}
	c.stop(down)
	var last uint64
	for i := range 20 {
		last = mustWrite(t, "POST", l.url()+"/v1/checks", "application/json", checkJSON(fmt.Sprintf("s-%d", i), 9400+i))
	}
	if err := l.node.Snapshot(); err != nil {
		t.Fatal(err)
	}
	c.start(down)
	v := c.voters[down].node
	waitFor(t, 10*time.Second, "the voter to catch up from the snapshot", func() bool {
		s := v.State()
		_, ok := s.Check("s-19")
		return ok && s.Index >= last && v.Ready()
	})
	if got, want := v.State().Shards(), l.node.State().Shards(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("shards after snapshot: %v, leader has %v", got, want)
	}
	if st := v.Stats(); st["last_snapshot_index"] == "0" {
		t.Fatalf("the voter caught up without a snapshot: %v", st)
	}
}
