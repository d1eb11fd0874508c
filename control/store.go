package control

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/bbolt"
)

// logStore is a voter's raft log and stable store (its term and vote).
type logStore interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// defaultWALSegment is the size of each file of the write-ahead log, allocated when the file
// is made; an entry larger than what is left is written whole and ends the file.
const defaultWALSegment = 16 << 20

// The log stores a voter may keep (ServerConfig.LogStore).
const (
	// LogStoreBolt is raft-boltdb: raft's log and stable store in one BoltDB file, raft.db;
	// two syncs per append. The default.
	LogStoreBolt = "boltdb"
	// LogStoreWAL is hashicorp/raft-wal (v0.4.0) in wal/: raft's log appended to files
	// allocated in advance, one write and one sync per append. Opt-in, with the defects of
	// that version (walDefects).
	LogStoreWAL = "wal"
)

// walDefects are the defects of hashicorp/raft-wal v0.4.0 that make it an opt-in store, not
// the default (TestLogStoreDefects and TestKillRestartVoter show them):
//
//   - A deletion of the log's suffix (raft does it when a new leader's log conflicts with
//     the entries a deposed leader wrote and did not commit) marks the tail segment sealed in
//     wal-meta.db without writing its index block (wal.go, truncateTailLocked sets SealTime
//     and MaxIndex but not IndexStart). The process reads that segment from the writer's
//     memory until it stops; once restarted, every read of it fails with "sealed segment has
//     no index block" (segment/reader.go, findFrameOffset), and raft.NewRaft, which reads
//     every entry after the last snapshot, fails: the voter cannot start on its data
//     directory. Upstream: hashicorp/raft-wal#31, fixed by #33 (ForceSeal) in v0.4.1.
//   - A deletion of the log's prefix (raft's compaction after a snapshot) moves the head
//     segment's MinIndex in the WAL's state, but the open (tail) segment's writer keeps the
//     MinIndex it was created with, and GetLog asks that writer first (state.go, getLog;
//     segment/writer.go, OffsetForFrame): the deleted entries of the open segment are still
//     returned while FirstIndex says they are gone, so a leader replays them to a follower
//     that needs a snapshot. Present in v0.4.2 too; walStore.GetLog answers
//     raft.ErrLogNotFound below FirstIndex.
const walDefects = "hashicorp/raft-wal v0.4.0: a voter restarted after raft deleted a suffix of its log cannot read it (sealed segment has no index block; raft-wal#31)"

// openLogStore opens the raft log and stable store of a voter's data directory: the store
// the directory already holds (raft.db, or wal/), else a new one of kind (LogStoreBolt when
// empty). A kind named that differs from the store the directory holds is an error, not a
// second, empty log beside the first: a voter never moves its log from one store to the
// other; to change a voter's store, remove it from the cluster, empty its data directory and
// join it again (it receives the state as a snapshot). The write-ahead log's files are of
// segment bytes (0: defaultWALSegment).
//
// BoltDB is the default again, after the write-ahead log was for a while: a BoltDB commit
// writes the pages of its tree, syncs, writes its meta page and syncs again (two fdatasync
// per raft append), where the write-ahead log writes once and syncs once, so the WAL takes
// about twice the single-client writes; but raft-wal v0.4.0 loses a voter to a kill
// (walDefects), and a crash losing nothing comes first. Both return from a write of entries
// only once they are on disk. (raft-wal keeps its own small metadata in a BoltDB file,
// wal/wal-meta.db, written when a segment file is added, not per append.)
func openLogStore(dataDir, kind string, segment int, log hclog.Logger) (logStore, error) {
	bolt, wal := filepath.Join(dataDir, "raft.db"), filepath.Join(dataDir, "wal")
	var holds []string
	for _, c := range []struct{ path, kind string }{{bolt, LogStoreBolt}, {wal, LogStoreWAL}} {
		switch _, err := os.Stat(c.path); {
		case err == nil:
			holds = append(holds, c.kind)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("control: raft store: %w", err)
		}
	}
	switch {
	case len(holds) > 1:
		return nil, fmt.Errorf("control: data directory %s holds two raft log stores, %s and %s: keep the one the voter wrote last and move the other away", dataDir, bolt, wal)
	case len(holds) == 1 && kind != "" && kind != holds[0]:
		return nil, fmt.Errorf("control: data directory %s holds a %q raft log store, not %q (-raft-log-store): a voter keeps the store it has; to change it, remove the voter from the cluster, empty its data directory and join it again, or leave -raft-log-store unset", dataDir, holds[0], kind)
	case len(holds) == 1:
		kind = holds[0]
	}
	switch kind {
	case "", LogStoreBolt:
		return openStore(bolt)
	case LogStoreWAL:
		if segment <= 0 {
			segment = defaultWALSegment
		}
		log.Warn("raft log store is hashicorp/raft-wal, which has known defects", "defects", walDefects)
		return openWAL(wal, segment, log)
	}
	return nil, fmt.Errorf("control: raft log store %q: want %q or %q", kind, LogStoreBolt, LogStoreWAL)
}

// walStore is the write-ahead log with what it holds open beside its files.
type walStore struct {
	*raftwal.WAL
	meta *metadb.BoltMetaDB
	lock *os.File
}

// Close closes the log, then its meta file (which raft-wal v0.4.0's Close leaves open, and
// locked), then releases the directory.
func (s *walStore) Close() error {
	err := errors.Join(s.WAL.Close(), s.meta.Close())
	if cerr := s.lock.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("control: close raft log: %w", err)
	}
	return nil
}

// GetLog reads an entry, and answers raft.ErrLogNotFound for one below the log's first
// index: raft-wal v0.4.0 still returns the entries of its open segment that a deletion of the
// log's prefix removed (walDefects), and raft, given them, replays the log to a follower
// that needs a snapshot instead of sending it one.
func (s *walStore) GetLog(index uint64, l *raft.Log) error {
	first, err := s.WAL.FirstIndex()
	if err != nil {
		return err
	}
	if index < first || first == 0 {
		return raft.ErrLogNotFound
	}
	return s.WAL.GetLog(index, l)
}

// openWAL opens (or makes) the write-ahead log in dir. A log that another process has open
// is refused at once (raft-wal itself would wait for it without end).
func openWAL(dir string, segment int, log hclog.Logger) (*walStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("control: raft log directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("control: raft log lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("control: raft log %s is in use by another process: %w", dir, err)
	}
	meta := &metadb.BoltMetaDB{}
	w, err := raftwal.Open(dir, raftwal.WithLogger(log.Named("wal")), raftwal.WithSegmentSize(segment),
		raftwal.WithMetaStore(meta))
	if err != nil {
		meta.Close()
		lock.Close()
		return nil, fmt.Errorf("control: open raft log %s: %w", dir, err)
	}
	return &walStore{WAL: w, meta: meta, lock: lock}, nil
}

// openStore opens a raft log and stable store in one BoltDB file, through raft-boltdb,
// synced on every write. BoltDB does not write its list of free pages on every commit (it
// rebuilds it from the file when it opens it): a commit writes the entries and the pages
// that lead to them, not a list that grows as the log is compacted. What is synced is as
// durable as before.
func openStore(path string) (*raftboltdb.BoltStore, error) {
	s, err := raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: &bbolt.Options{
		Timeout: time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType}})
	if err != nil {
		return nil, fmt.Errorf("control: open raft store %s: %w", path, err)
	}
	return s, nil
}

// Bounds of recentLogs.
const (
	recentEntries  = 64       // entries held
	recentMaxBytes = 64 << 10 // an entry larger than this is not held
)

// recentLogs keeps the last small entries written to a log store in memory, so that the
// leader's replication reads what it has just written (every append, to every follower)
// without a read of the file and a decoding. At most recentEntries entries of at most
// recentMaxBytes are held; a larger entry (a whole document) is read from the store.
type recentLogs struct {
	logStore
	stored prometheus.Observer // the time of each StoreLogs; nil: not timed
	mu     sync.Mutex
	ring   [recentEntries]*raft.Log
}

// StoreLogs writes the entries to the store, then holds the small ones.
func (c *recentLogs) StoreLogs(logs []*raft.Log) error {
	t0 := time.Now()
	err := c.logStore.StoreLogs(logs)
	if c.stored != nil {
		c.stored.Observe(time.Since(t0).Seconds())
	}
	if err != nil {
		c.mu.Lock()
		clear(c.ring[:])
		c.mu.Unlock()
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range logs {
		slot := &c.ring[l.Index%recentEntries]
		if len(l.Data)+len(l.Extensions) <= recentMaxBytes {
			*slot = l
		} else {
			*slot = nil
		}
	}
	return nil
}

// StoreLog writes one entry.
func (c *recentLogs) StoreLog(l *raft.Log) error { return c.StoreLogs([]*raft.Log{l}) }

// GetLog returns an entry held, or reads it from the store.
func (c *recentLogs) GetLog(index uint64, l *raft.Log) error {
	c.mu.Lock()
	held := c.ring[index%recentEntries]
	c.mu.Unlock()
	if held != nil && held.Index == index {
		*l = *held
		return nil
	}
	return c.logStore.GetLog(index, l)
}

// DeleteRange deletes from the store and forgets every entry held.
func (c *recentLogs) DeleteRange(lo, hi uint64) error {
	c.mu.Lock()
	clear(c.ring[:])
	c.mu.Unlock()
	return c.logStore.DeleteRange(lo, hi)
}

// IsMonotonic tells raft whether the store holds no gaps (raft-wal: then raft deletes the
// whole log when it installs a snapshot), as the store says.
func (c *recentLogs) IsMonotonic() bool {
	m, ok := c.logStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
