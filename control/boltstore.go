package control

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// Bucket names of the BoltDB file.
const (
	bucketLogs   = "logs"
	bucketStable = "stable"
)

// BoltStore is raft's log store and stable store in one BoltDB file. Every write is one
// BoltDB transaction, synced to disk before it returns, so an acknowledged entry survives a
// crash of the process or the machine.
//
// (raft-boltdb/v2 v2.3.1 imports go-metrics/compat, which go-metrics v0.7.0 — required by
// raft v1.8.0 and memberlist v0.7.0 — no longer has; this store is the same idea on bbolt.)
type BoltStore struct {
	db *bolt.DB
}

// OpenBoltStore opens or creates the BoltDB file at path.
func OpenBoltStore(path string) (*BoltStore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("control: open raft store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists([]byte(bucketLogs)); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists([]byte(bucketStable))
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("control: init raft store %s: %w", path, err)
	}
	return &BoltStore{db: db}, nil
}

// Close closes the file.
func (s *BoltStore) Close() error { return s.db.Close() }

// FirstIndex returns the first index written, 0 when there is none.
func (s *BoltStore) FirstIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket([]byte(bucketLogs)).Cursor().First(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// LastIndex returns the last index written, 0 when there is none.
func (s *BoltStore) LastIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket([]byte(bucketLogs)).Cursor().Last(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// GetLog reads the entry at index into log, or returns raft.ErrLogNotFound.
func (s *BoltStore) GetLog(index uint64, log *raft.Log) error {
	return s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte(bucketLogs)).Get(uint64Key(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		if err := decodeLog(v, log); err != nil {
			return fmt.Errorf("control: raft log entry %d: %w", index, err)
		}
		log.Index = index
		return nil
	})
}

// StoreLog stores one entry.
func (s *BoltStore) StoreLog(log *raft.Log) error { return s.StoreLogs([]*raft.Log{log}) }

// StoreLogs stores entries in one transaction.
func (s *BoltStore) StoreLogs(logs []*raft.Log) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucketLogs))
		for _, l := range logs {
			if err := b.Put(uint64Key(l.Index), encodeLog(l)); err != nil {
				return fmt.Errorf("control: store raft log entry %d: %w", l.Index, err)
			}
		}
		return nil
	})
}

// DeleteRange deletes the entries from min to max, both included.
func (s *BoltStore) DeleteRange(minIdx, maxIdx uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte(bucketLogs)).Cursor()
		for k, _ := c.Seek(uint64Key(minIdx)); k != nil; k, _ = c.Next() {
			if binary.BigEndian.Uint64(k) > maxIdx {
				break
			}
			if err := c.Delete(); err != nil {
				return fmt.Errorf("control: delete raft log entries: %w", err)
			}
		}
		return nil
	})
}

// Set stores a value of the stable store.
func (s *BoltStore) Set(key, val []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucketStable)).Put(key, val) })
}

// Get returns a value of the stable store, or an empty slice when key is not set.
func (s *BoltStore) Get(key []byte) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		out = append([]byte(nil), tx.Bucket([]byte(bucketStable)).Get(key)...)
		return nil
	})
	return out, err
}

// SetUint64 stores a number of the stable store.
func (s *BoltStore) SetUint64(key []byte, val uint64) error { return s.Set(key, uint64Key(val)) }

// GetUint64 returns a number of the stable store, 0 when key is not set.
func (s *BoltStore) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil || len(v) == 0 {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("control: stable store key %q holds %d bytes, want 8", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func uint64Key(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// encodeLog writes an entry as term, type, appended-at (Unix ns), then the data and the
// extensions, each preceded by its length.
func encodeLog(l *raft.Log) []byte {
	b := make([]byte, 0, 8+1+8+8+len(l.Data)+len(l.Extensions))
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Extensions)))
	return append(b, l.Extensions...)
}

func decodeLog(b []byte, l *raft.Log) error {
	if len(b) < 8+1+8+4 {
		return errors.New("truncated entry")
	}
	l.Term = binary.BigEndian.Uint64(b)
	l.Type = raft.LogType(b[8])
	l.AppendedAt = time.Time{}
	if at := int64(binary.BigEndian.Uint64(b[9:])); at != 0 {
		l.AppendedAt = time.Unix(0, at)
	}
	rest := b[17:]
	var ok bool
	if l.Data, rest, ok = lengthPrefixed(rest); !ok {
		return errors.New("truncated entry")
	}
	if l.Extensions, _, ok = lengthPrefixed(rest); !ok {
		return errors.New("truncated entry")
	}
	return nil
}

// lengthPrefixed splits a 4-byte length and that many bytes (copied) off b.
func lengthPrefixed(b []byte) (val, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(len(b)-4) < uint64(n) {
		return nil, nil, false
	}
	if n > 0 {
		val = append([]byte(nil), b[4:4+n]...)
	}
	return val, b[4+n:], true
}
