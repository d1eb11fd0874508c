package client

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/vigil-dns/vigil/control/state"
)

// A data-plane node's copy of the configuration on local disk is two files: the base (path),
// a whole state as JSON, and the journal (path + ".journal"), the deltas applied since, each
// appended and synced before it is used. A change costs what it changed on disk. When the
// journal outgrows the base, the copy is compacted: a new base is written beside the old and
// renamed over it, then the journal is emptied. A crash at any point leaves a consistent
// copy: a torn record ends the journal, and records the base already holds are skipped.
//
// A journal record is its length (4 bytes, big-endian), the CRC-32C of its payload (4 bytes)
// and the payload, a Delta as JSON.

// journalPath is the journal beside the base at path.
func journalPath(path string) string { return path + ".journal" }

// minCompact is the journal size under which the copy is never compacted.
const minCompact = 1 << 20

// maxRecord bounds one journal record, so that a damaged length cannot make the loader
// allocate without limit.
const maxRecord = 1 << 30

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// diskCopy is an open copy: its journal is open for appending.
type diskCopy struct {
	path     string
	journal  *os.File
	jsize    int64 // bytes of good records in the journal
	baseSize int64
}

// SaveCache writes s to path as a new base, atomically (a temporary file in the same
// directory, fsync, rename over path, fsync of the directory), and empties the journal. A
// crash leaves either the old copy or the new.
func SaveCache(path string, s *state.State) error {
	_, err := writeBase(path, s)
	if err != nil {
		return err
	}
	if err := os.Remove(journalPath(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("control: empty the configuration journal: %w", err)
	}
	return nil
}

// writeBase writes s as the base at path atomically and returns its size.
func writeBase(path string, s *state.State) (int64, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("control: configuration copy directory: %w", err)
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("control: write configuration copy: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// A data-plane node's copy holds what GET /v1/state shows: never a notification secret,
	// even from a voter that sent one.
	if err := s.ForReaders().WriteJSON(f); err != nil {
		return 0, fmt.Errorf("control: write configuration copy: %w", err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("control: sync configuration copy: %w", err)
	}
	size, _ := f.Seek(0, io.SeekCurrent)
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("control: close configuration copy: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return 0, fmt.Errorf("control: replace configuration copy: %w", err)
	}
	ok = true
	syncDir(dir)
	return size, nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// LoadCache reads the copy at path: the base, then every journal record that follows it. A
// missing base gives an error that satisfies errors.Is(err, os.ErrNotExist).
func LoadCache(path string) (*state.State, error) {
	s, _, _, err := loadCopy(path)
	return s, err
}

// loadCopy reads the copy at path and returns it, the size of its base, and the length of the
// journal's good records.
func loadCopy(path string) (*state.State, int64, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("control: read configuration copy: %w", err)
	}
	defer f.Close()
	s, err := state.ReadState(f)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("control: configuration copy %s is corrupt: %w", path, err)
	}
	baseSize, _ := f.Seek(0, io.SeekEnd)
	j, err := os.Open(journalPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return s, baseSize, 0, nil
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("control: read configuration journal: %w", err)
	}
	defer j.Close()
	r := bufio.NewReaderSize(j, 64<<10)
	var good int64
	for {
		d, n, err := readRecord(r)
		if err != nil {
			break // the end, or a torn record: what follows is not trusted
		}
		if d.Index > s.Index {
			if d.From > s.Index {
				break // a gap: the records after it do not follow
			}
			e, err := s.ApplyDelta(d)
			if err != nil {
				break
			}
			s = e.Next
		}
		good += n
	}
	return s, baseSize, good, nil
}

// readRecord reads one journal record and returns its delta and length.
func readRecord(r io.Reader) (*state.Delta, int64, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, 0, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n > maxRecord {
		return nil, 0, errors.New("record too long")
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, 0, err
	}
	if crc32.Checksum(payload, crcTable) != binary.BigEndian.Uint32(hdr[4:]) {
		return nil, 0, errors.New("record damaged")
	}
	d := &state.Delta{}
	if err := json.Unmarshal(payload, d); err != nil {
		return nil, 0, err
	}
	return d, int64(len(hdr)) + int64(n), nil
}

// openCopy loads the copy at path and opens its journal for appending, cut after its last
// good record. A missing copy gives a nil state and no error.
func openCopy(path string) (*diskCopy, *state.State, error) {
	s, baseSize, good, err := loadCopy(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		s = nil
	case err != nil:
		return nil, nil, err
	}
	c := &diskCopy{path: path, baseSize: baseSize}
	if s != nil {
		if err := c.openJournal(good); err != nil {
			return nil, nil, err
		}
	}
	return c, s, nil
}

// openJournal opens the journal for appending after its first size bytes.
func (c *diskCopy) openJournal(size int64) error {
	j, err := os.OpenFile(journalPath(c.path), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("control: open configuration journal: %w", err)
	}
	if err := j.Truncate(size); err != nil {
		j.Close()
		return fmt.Errorf("control: cut configuration journal: %w", err)
	}
	if _, err := j.Seek(size, io.SeekStart); err != nil {
		j.Close()
		return fmt.Errorf("control: open configuration journal: %w", err)
	}
	c.journal, c.jsize = j, size
	return nil
}

// save writes s as a new base and empties the journal.
func (c *diskCopy) save(s *state.State) error {
	if c.journal != nil {
		c.journal.Close()
		c.journal = nil
	}
	size, err := writeBase(c.path, s)
	if err != nil {
		return err
	}
	c.baseSize = size
	return c.openJournal(0)
}

// add appends d, which brought the copy to s, to the journal and syncs it; when the journal
// has outgrown the base it writes s as the new base instead.
func (c *diskCopy) add(d *state.Delta, s *state.State) error {
	if c.journal == nil || c.jsize > max(c.baseSize, minCompact) {
		return c.save(s)
	}
	dd := *d
	dd.Settings.Notifications = d.Settings.Notifications.Redacted() // as in the base: no secret
	payload, err := json.Marshal(&dd)
	if err != nil {
		return fmt.Errorf("control: encode configuration change: %w", err)
	}
	rec := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint32(rec[:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(rec[4:], crc32.Checksum(payload, crcTable))
	rec = append(rec, payload...)
	if _, err := c.journal.Write(rec); err != nil {
		return c.recover(s, fmt.Errorf("control: append configuration change: %w", err))
	}
	if err := c.journal.Sync(); err != nil {
		return c.recover(s, fmt.Errorf("control: sync configuration journal: %w", err))
	}
	c.jsize += int64(len(rec))
	return nil
}

// recover writes a whole base after a failed append, so that a partly written record is
// never followed by another.
func (c *diskCopy) recover(s *state.State, err error) error {
	if serr := c.save(s); serr != nil {
		return errors.Join(err, serr)
	}
	return nil
}

// close closes the journal.
func (c *diskCopy) close() {
	if c.journal != nil {
		c.journal.Close()
		c.journal = nil
	}
}
