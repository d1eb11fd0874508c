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
	// two syncs per append.
	LogStoreBolt = "boltdb"
	// LogStoreWAL is hashicorp/raft-wal in wal/, the default: raft's log appended to files
	// allocated in advance, one write and one sync per append.
	LogStoreWAL = "wal"
)

// openLogStore opens the raft log and stable store of a voter's data directory: the store
// the directory already holds (raft.db, or wal/), else a new one of kind (LogStoreWAL when
// empty). The write-ahead log's files are of segment bytes (0: defaultWALSegment).
//
// The write-ahead log is the default because a voter's writes are bound by its log's syncs:
// a BoltDB commit writes the pages of its tree, syncs, writes its meta page and syncs again
// (two fdatasync per raft append, counted with strace on every voter), where the write-ahead
// log writes once and syncs once; a single client's write waits for the leader's append and
// then a follower's, so the second sync is paid twice per write. BoltDB stays for the data
// directories that hold it (raft.db): a voter never moves its log from one store to the
// other; to change a voter's store, remove it from the cluster, empty its data directory and
// join it again. Both return from a write of entries only once they are on disk. (raft-wal
// keeps its own small metadata in a BoltDB file, wal/wal-meta.db, written when a segment
// file is added, not per append.)
func openLogStore(dataDir, kind string, segment int, log hclog.Logger) (logStore, error) {
	bolt, wal := filepath.Join(dataDir, "raft.db"), filepath.Join(dataDir, "wal")
	for _, p := range []string{bolt, wal} {
		switch _, err := os.Stat(p); {
		case err == nil && p == bolt:
			return openStore(bolt)
		case err == nil:
			kind = LogStoreWAL
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("control: raft store: %w", err)
		}
	}
	switch kind {
	case LogStoreBolt:
		return openStore(bolt)
	case "", LogStoreWAL:
		if segment <= 0 {
			segment = defaultWALSegment
		}
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
