package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

func mustDoc(t *testing.T, y string) *config.Document {
	t.Helper()
	d, err := config.Decode([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func applyLog(t *testing.T, f *FSM, index uint64, c *state.Command) error {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	res := f.Apply(&raft.Log{Index: index, Data: data}).(ApplyResult)
	return res.Err
}

// TestFSMCommandsAndSnapshot applies a sequence of commands, takes a snapshot, restores it
// into a fresh state machine and checks that both agree, shards and allocator included.
func TestFSMCommandsAndSnapshot(t *testing.T) {
	f := NewFSM(newSeqAllocator, nil)
	if err := applyLog(t, f, 1, &state.Command{Op: state.OpPutCheck, Check: &config.Check{ID: "x"}}); err == nil {
		t.Fatal("a check on an empty store (no regions) was accepted")
	}
	if f.State().Index != 0 {
		t.Fatalf("rejected command moved the index to %d", f.State().Index)
	}
	if err := applyLog(t, f, 2, &state.Command{Op: state.OpApplyDocument, Document: mustDoc(t, testDoc)}); err != nil {
		t.Fatal(err)
	}
	z := config.DefaultZone()
	z.Name = "b.test."
	if err := applyLog(t, f, 3, &state.Command{Op: state.OpPutZone, Zone: &z}); err != nil {
		t.Fatal(err)
	}
	if err := applyLog(t, f, 4, &state.Command{Op: state.OpPutZone, Zone: &z, Create: true}); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("create of an existing zone: %v", err)
	}
	if err := applyLog(t, f, 5, &state.Command{Op: state.OpDeleteCheck, ID: "missing"}); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("delete of a missing check: %v", err)
	}
	s := f.State()
	if s.Index != 3 || !reflect.DeepEqual(s.Shards(), map[string][]int{"example.test.": {0, 1, 2, 3}, "b.test.": {4, 5, 6, 7}}) {
		t.Fatalf("state: index %d shards %v", s.Index, s.Shards())
	}

	snap, _ := f.Snapshot()
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := NewFSM(newSeqAllocator, nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(roundTrip(t, f.State()), roundTrip(t, g.State())) {
		t.Fatal("restored state differs")
	}
	// The restored allocator knows the shards in use: a new zone gets a free block.
	z.Name = "c.test."
	for _, m := range []*FSM{f, g} {
		if err := applyLog(t, m, 6, &state.Command{Op: state.OpPutZone, Zone: &z}); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := f.State().Shards()["c.test."], g.State().Shards()["c.test."]; !reflect.DeepEqual(a, b) || a[0] != 8 {
		t.Fatalf("new shard after restore: %v vs %v", a, b)
	}
}

// TestShardRollback: a document whose zones do not fit in the fleet is rejected whole and
// the allocator keeps what it had.
func TestShardRollback(t *testing.T) {
	f := NewFSM(newSeqAllocator, nil)
	small := "regions: [a, b, c]\nname_servers: {mode: stateful, fleet: 8, shard_size: 4}\nzones:\n  - name: one.test\n"
	if err := applyLog(t, f, 1, &state.Command{Op: state.OpApplyDocument, Document: mustDoc(t, small)}); err != nil {
		t.Fatal(err)
	}
	three := small + "  - name: two.test\n  - name: three.test\n"
	if err := applyLog(t, f, 2, &state.Command{Op: state.OpApplyDocument, Document: mustDoc(t, three)}); err == nil {
		t.Fatal("three zones of 4 in a fleet of 8 were accepted")
	}
	two := small + "  - name: two.test\n"
	if err := applyLog(t, f, 3, &state.Command{Op: state.OpApplyDocument, Document: mustDoc(t, two)}); err != nil {
		t.Fatalf("after the rollback two zones must fit: %v", err)
	}
	if s := f.State(); len(s.Shards()) != 2 || s.Index != 3 {
		t.Fatalf("shards %v at index %d", s.Shards(), s.Index)
	}
}

func roundTrip(t *testing.T, s *state.State) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type memSink struct{ bytes.Buffer }

func (m *memSink) ID() string    { return "mem" }
func (m *memSink) Cancel() error { return nil }
func (m *memSink) Close() error  { return nil }

// TestLogStores: a new data directory gets the store asked for (BoltDB by default, the
// write-ahead log when asked); a directory that holds one keeps it when none is asked and
// refuses the other, with an error that says what to do; a directory that holds both is
// refused; in both, entries and stable values survive a close and reopen and ranges delete;
// a write-ahead log open elsewhere is refused; an unknown kind is refused.
func TestLogStores(t *testing.T) {
	has := func(dir, name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	refused := func(t *testing.T, dir, kind, holds string) {
		t.Helper()
		s, err := openLogStore(dir, kind, 0, hclog.NewNullLogger())
		if err == nil {
			s.Close()
			t.Fatalf("a data directory that holds %s was opened as %s", holds, kind)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("holds a %q raft log store, not %q", holds, kind)) ||
			!strings.Contains(err.Error(), "empty its data directory and join it again") {
			t.Errorf("refusal does not say what the directory holds and how to change it: %v", err)
		}
	}
	t.Run("wal", func(t *testing.T) {
		dir := t.TempDir()
		testLogStore(t, func() (logStore, error) { return openLogStore(dir, LogStoreWAL, 0, hclog.NewNullLogger()) })
		if has(dir, "raft.db") || !has(dir, "wal") {
			t.Errorf("asked for the WAL, a new directory got raft.db %v, wal/ %v", has(dir, "raft.db"), has(dir, "wal"))
		}
		refused(t, dir, LogStoreBolt, LogStoreWAL)
		if has(dir, "raft.db") {
			t.Errorf("a directory that holds wal/ got raft.db")
		}
		s, err := openLogStore(dir, "", 0, hclog.NewNullLogger()) // kept: wal/ is there
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, ok := s.(*walStore); !ok {
			t.Errorf("a directory that holds wal/ opened as %T", s)
		}
		if again, err := openLogStore(dir, LogStoreWAL, 0, hclog.NewNullLogger()); err == nil {
			again.Close()
			t.Errorf("a log open elsewhere was opened again")
		}
	})
	t.Run("bolt", func(t *testing.T) {
		dir := t.TempDir()
		testLogStore(t, func() (logStore, error) { return openLogStore(dir, "", 0, hclog.NewNullLogger()) })
		if !has(dir, "raft.db") || has(dir, "wal") {
			t.Errorf("by default, a new directory got raft.db %v, wal/ %v", has(dir, "raft.db"), has(dir, "wal"))
		}
		refused(t, dir, LogStoreWAL, LogStoreBolt)
		if has(dir, "wal") {
			t.Errorf("a data directory that holds raft.db got a write-ahead log")
		}
		s, err := openLogStore(dir, LogStoreBolt, 0, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if err := os.Mkdir(filepath.Join(dir, "wal"), 0o700); err != nil {
			t.Fatal(err)
		}
		if s, err := openLogStore(dir, "", 0, hclog.NewNullLogger()); err == nil || !strings.Contains(err.Error(), "two raft log stores") {
			if err == nil {
				s.Close()
			}
			t.Errorf("a directory that holds raft.db and wal/ was opened: %v", err)
		}
	})
	if _, err := openLogStore(t.TempDir(), "leveldb", 0, hclog.NewNullLogger()); err == nil {
		t.Errorf("an unknown log store was opened")
	}
}

func testLogStore(t *testing.T, open func() (logStore, error)) {
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	logs := []*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("a")},
		{Index: 2, Term: 1, Type: raft.LogNoop},
		{Index: 3, Term: 2, Type: raft.LogCommand, Data: []byte("ccc"), Extensions: []byte("x")},
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 2); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = open(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	term, _ := s.GetUint64([]byte("CurrentTerm"))
	if first != 1 || last != 3 || term != 2 {
		t.Fatalf("first %d last %d term %d", first, last, term)
	}
	var l raft.Log
	if err := s.GetLog(3, &l); err != nil || string(l.Data) != "ccc" || string(l.Extensions) != "x" || l.Term != 2 {
		t.Fatalf("entry 3: %+v %v", l, err)
	}
	if err := s.DeleteRange(1, 2); err != nil {
		t.Fatal(err)
	}
	// A deleted entry is gone, or (raft-wal, until its file is dropped) still the entry as
	// written: raft reads no index below FirstIndex.
	if err := s.GetLog(1, &l); !errors.Is(err, raft.ErrLogNotFound) && (err != nil || string(l.Data) != "a") {
		t.Fatalf("deleted entry: %+v %v", l, err)
	}
	if first, _ = s.FirstIndex(); first != 3 {
		t.Fatalf("first after delete: %d", first)
	}
	if v, _ := s.Get([]byte("missing")); len(v) != 0 {
		t.Fatalf("missing key: %q", v)
	}
}

// TestShardAllocatorsGuarantee: through the state machine, the real allocator of package
// shard gives 60 zones shards of 4 out of 24 name servers with no two sharing more than 2,
// and a voter restored from a snapshot allocates the next zone exactly as the original does.
func TestShardAllocatorsGuarantee(t *testing.T) {
	var b strings.Builder
	b.WriteString("regions: [a, b, c]\nname_servers: {mode: stateful, fleet: 24, shard_size: 4, max_overlap: 2}\nzones:\n")
	for i := range 60 {
		fmt.Fprintf(&b, "  - name: zone%02d.test\n", i)
	}
	f := NewFSM(state.ShardAllocators, nil)
	if err := applyLog(t, f, 1, &state.Command{Op: state.OpApplyDocument, Document: mustDoc(t, b.String())}); err != nil {
		t.Fatal(err)
	}
	shards := f.State().Shards()
	if len(shards) != 60 {
		t.Fatalf("%d shards for 60 zones", len(shards))
	}
	zones := slices.Sorted(maps.Keys(shards))
	for i, z := range zones {
		if len(shards[z]) != 4 {
			t.Fatalf("zone %s: shard %v", z, shards[z])
		}
		for _, o := range zones[i+1:] {
			shared := 0
			for _, s := range shards[z] {
				if slices.Contains(shards[o], s) {
					shared++
				}
			}
			if shared > 2 {
				t.Fatalf("zones %s %v and %s %v share %d name servers", z, shards[z], o, shards[o], shared)
			}
		}
	}

	snap, _ := f.Snapshot()
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := NewFSM(state.ShardAllocators, nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	z := config.DefaultZone()
	z.Name = "late.test."
	for _, m := range []*FSM{f, g} {
		if err := applyLog(t, m, 2, &state.Command{Op: state.OpPutZone, Zone: &z}); err != nil {
			t.Fatal(err)
		}
	}
	if a, c := f.State().Shards()["late.test."], g.State().Shards()["late.test."]; len(a) != 4 || !reflect.DeepEqual(a, c) {
		t.Fatalf("next zone after restore: %v on the original, %v on the restored voter", a, c)
	}
}

// countingStore counts the entries read from a log store.
type countingStore struct {
	logStore
	reads int
}

func (s *countingStore) GetLog(index uint64, l *raft.Log) error {
	s.reads++
	return s.logStore.GetLog(index, l)
}

// TestRecentLogs: the entries just written are read back from memory, the same as written,
// except an entry larger than the bound; a deletion forgets them; raft is told the write-
// ahead log is monotonic through the wrapper.
func TestRecentLogs(t *testing.T) {
	w, err := openLogStore(t.TempDir(), LogStoreWAL, 0, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	under := &countingStore{logStore: w}
	c := &recentLogs{logStore: under}
	big := bytes.Repeat([]byte("x"), recentMaxBytes+1)
	var logs []*raft.Log
	for i := uint64(1); i <= recentEntries+2; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprint(i))})
	}
	logs[2].Data = big
	if err := c.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	read := func(i uint64) raft.Log {
		var l raft.Log
		if err := c.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		return l
	}
	for _, i := range []uint64{recentEntries + 2, recentEntries, 4} {
		if l := read(i); string(l.Data) != fmt.Sprint(i) || l.Index != i {
			t.Fatalf("entry %d: %+v", i, l)
		}
	}
	if under.reads != 0 {
		t.Fatalf("%d reads of the store for entries just written", under.reads)
	}
	if l := read(2); string(l.Data) != "2" || under.reads != 1 {
		t.Fatalf("entry 2, overwritten in memory by entry %d: %q after %d reads", recentEntries+2, l.Data, under.reads)
	}
	if l := read(3); !bytes.Equal(l.Data, big) || under.reads != 2 {
		t.Fatalf("the large entry: %d bytes after %d reads", len(l.Data), under.reads)
	}
	if err := c.DeleteRange(1, 10); err != nil {
		t.Fatal(err)
	}
	read(20)
	if under.reads != 3 {
		t.Fatalf("after a deletion: %d reads, want 3", under.reads)
	}
	if !(&recentLogs{logStore: w}).IsMonotonic() {
		t.Fatalf("the write-ahead log is not said to be monotonic")
	}
}
