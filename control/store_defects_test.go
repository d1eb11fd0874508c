package control

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// storeLogs appends entries lo..hi of term 1 to s.
func storeLogs(t *testing.T, s raft.LogStore, lo, hi uint64) {
	t.Helper()
	var logs []*raft.Log
	for i := lo; i <= hi; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprint("entry ", i))})
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
}

// TestLogStoreCompaction: after raft's compaction deletes entries 1-356 of 400 (all in the
// open segment), the store says its first index is 357 and answers raft.ErrLogNotFound for
// every deleted entry, so that raft sends a follower that needs them a snapshot; the
// entries kept read back. On both stores as the voter opens them; raft-wal v0.4.0 by itself
// returns the deleted entries (the defect walStore.GetLog guards against), shown apart.
func TestLogStoreCompaction(t *testing.T) {
	check := func(t *testing.T, s raft.LogStore) (leaked int) {
		storeLogs(t, s, 1, 400)
		if err := s.DeleteRange(1, 356); err != nil {
			t.Fatal(err)
		}
		if first, err := s.FirstIndex(); err != nil || first != 357 {
			t.Errorf("FirstIndex after deleting 1-356 = %d, %v; want 357", first, err)
		}
		var l raft.Log
		for i := uint64(1); i <= 356; i++ {
			if err := s.GetLog(i, &l); !errors.Is(err, raft.ErrLogNotFound) {
				leaked++
			}
		}
		for i := uint64(357); i <= 400; i++ {
			if err := s.GetLog(i, &l); err != nil || l.Index != i {
				t.Errorf("GetLog(%d) after compaction = index %d, %v", i, l.Index, err)
			}
		}
		return leaked
	}
	for _, kind := range []string{LogStoreBolt, LogStoreWAL} {
		t.Run(kind, func(t *testing.T) {
			s, err := openLogStore(t.TempDir(), kind, 0, hclog.NewNullLogger())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if n := check(t, s); n > 0 {
				t.Errorf("%d of the 356 deleted entries are still returned by GetLog", n)
			}
		})
	}
	t.Run("raft-wal v0.4.0 unguarded", func(t *testing.T) {
		s, err := openWAL(t.TempDir(), defaultWALSegment, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		n := check(t, s.WAL)
		t.Logf("raft-wal v0.4.0 by itself returns %d of the 356 deleted entries", n)
		if n == 0 {
			t.Errorf("raft-wal no longer returns deleted entries of its open segment: walStore.GetLog's guard and walDefects can go")
		}
	})
}

// TestLogStoreSuffixDeleteReopen: after raft deletes a suffix of the log (entries a deposed
// leader wrote and did not commit, 91-100 of 100), the store is closed as a kill would leave
// it and reopened; every entry kept reads back, and new entries append after them. BoltDB
// does; raft-wal v0.4.0 cannot read the entries of the segment the deletion sealed (walDefects:
// "sealed segment has no index block"), which is what makes raft.NewRaft fail on a restarted
// voter; that subtest shows the defect is there and fails once it is gone, so that the
// default can be revisited.
func TestLogStoreSuffixDeleteReopen(t *testing.T) {
	run := func(t *testing.T, kind string) error {
		dir := t.TempDir()
		s, err := openLogStore(dir, kind, 0, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		storeLogs(t, s, 1, 100)
		if err := s.DeleteRange(91, 100); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = openLogStore(dir, "", 0, hclog.NewNullLogger()); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if last, err := s.LastIndex(); err != nil || last != 90 {
			t.Errorf("LastIndex after deleting 91-100 and reopening = %d, %v; want 90", last, err)
		}
		var l raft.Log
		for i := uint64(1); i <= 90; i++ {
			if err := s.GetLog(i, &l); err != nil {
				return fmt.Errorf("GetLog(%d) after reopening: %w", i, err)
			}
		}
		storeLogs(t, s, 91, 95)
		if err := s.GetLog(95, &l); err != nil || l.Index != 95 {
			return fmt.Errorf("GetLog(95) after appending again = index %d, %v", l.Index, err)
		}
		return nil
	}
	t.Run(LogStoreBolt, func(t *testing.T) {
		if err := run(t, LogStoreBolt); err != nil {
			t.Error(err)
		}
	})
	t.Run("raft-wal v0.4.0", func(t *testing.T) {
		err := run(t, LogStoreWAL)
		t.Logf("raft-wal v0.4.0 after a suffix deletion and a reopen: %v", err)
		if err == nil || !strings.Contains(err.Error(), "sealed segment has no index block") {
			t.Errorf("the suffix deletion defect of raft-wal v0.4.0 is gone (%v): walDefects and the default store can be revisited", err)
		}
	})
}
