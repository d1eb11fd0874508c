package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The log: one record a line, "CRC32 JSON\n", the checksum (IEEE, 8 hex digits) over the
// JSON. Readable with a pager, checkable record by record.

// Record kinds.
const (
	kindVerdict = "v"
	kindAnswer  = "a"
	kindMark    = "m" // the location runs
	kindStart   = "s" // the location started: the time before was not observed
)

// record is one line of the log.
type record struct {
	Kind string `json:"k"`
	At   int64  `json:"t"` // unix ms
	// Verdict changes.
	Check     string `json:"c,omitempty"`
	From      string `json:"f,omitempty"`
	To        string `json:"to,omitempty"`
	Healthy   int    `json:"h,omitempty"`
	Unhealthy int    `json:"u,omitempty"`
	Fresh     int    `json:"n,omitempty"`
	Stale     int    `json:"s,omitempty"`
	// Answer changes.
	Name       string   `json:"name,omitempty"`
	Type       string   `json:"type,omitempty"`
	Was        []string `json:"was,omitempty"`
	Now        []string `json:"now,omitempty"`
	LastResort bool     `json:"lr,omitempty"`
}

func recordOf(c Change) record {
	return record{Kind: kindVerdict, At: c.At.UnixMilli(), Check: c.Check, From: c.From, To: c.To,
		Healthy: c.Healthy, Unhealthy: c.Unhealthy, Fresh: c.Fresh, Stale: c.Stale}
}

func (r record) change() Change {
	return Change{Check: r.Check, At: time.UnixMilli(r.At), From: r.From, To: r.To, Healthy: r.Healthy,
		Unhealthy: r.Unhealthy, Fresh: r.Fresh, Stale: r.Stale}
}

func answerRecord(a AnswerChange) record {
	return record{Kind: kindAnswer, At: a.At.UnixMilli(), Name: a.Name, Type: a.Type, Was: a.From, Now: a.To, LastResort: a.LastResort}
}

func (r record) answer() AnswerChange {
	return AnswerChange{Name: r.Name, Type: r.Type, At: time.UnixMilli(r.At), From: r.Was, To: r.Now, LastResort: r.LastResort}
}

// maxLine bounds one line of the log (an answer change with many values is the longest).
const maxLine = 64 << 10

// file is the log on disk: the current file and the previous one.
type file struct {
	path string
	f    *os.File
	size int64
	max  int64 // bytes of one file
	buf  bytes.Buffer
}

// openFile replays path+".old" then path through fn, cuts a damaged tail off path, and opens
// path to append.
func openFile(path string, maxBytes int64, log *slog.Logger, fn func(record)) (*file, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if _, err := readFile(path+".old", log, fn); err != nil {
		return nil, err
	}
	good, err := readFile(path, log, fn)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("history: %w", err)
	}
	if st.Size() > good {
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, fmt.Errorf("history: cutting the damaged tail of %s: %w", path, err)
		}
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("history: %w", err)
	}
	return &file{path: path, f: f, size: good, max: maxBytes / 2}, nil
}

// readFile replays one file; it returns the length of its readable part. A missing file is
// empty; a damaged record ends the file with a log line.
func readFile(path string, log *slog.Logger, fn func(record)) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var good int64
	for n := 0; ; n++ {
		line, err := r.ReadSlice('\n')
		if err == io.EOF && len(line) == 0 {
			return good, nil
		}
		rec, perr := parseLine(line, err)
		if perr != nil {
			log.Warn("history: skipping the damaged end of the log", "file", path, "offset", good, "record", n, "err", perr)
			return good, nil
		}
		good += int64(len(line))
		fn(rec)
	}
}

// parseLine checks and decodes one line as ReadSlice returned it.
func parseLine(line []byte, readErr error) (record, error) {
	var rec record
	switch {
	case errors.Is(readErr, bufio.ErrBufferFull):
		return rec, errors.New("line too long")
	case readErr != nil:
		return rec, fmt.Errorf("unfinished line: %w", readErr)
	case len(line) < 10 || line[8] != ' ':
		return rec, errors.New("no checksum")
	}
	sum, err := strconv.ParseUint(string(line[:8]), 16, 32)
	if err != nil {
		return rec, fmt.Errorf("checksum: %w", err)
	}
	body := line[9 : len(line)-1]
	if crc32.ChecksumIEEE(body) != uint32(sum) {
		return rec, errors.New("checksum mismatch")
	}
	if err := json.Unmarshal(body, &rec); err != nil {
		return rec, fmt.Errorf("record: %w", err)
	}
	return rec, nil
}

// flushAt is how much of a batch of records is buffered before it is written: a batch of a
// million first verdicts is written a part at a time, each part where the file's bound says,
// and never held whole.
const flushAt = 256 << 10

// append writes recs and syncs; when the file is full it becomes the previous one first.
func (l *file) append(recs []record) error {
	l.buf.Reset()
	for _, r := range recs {
		body, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if len(body)+10 > maxLine {
			continue // cannot happen with the configuration's bounds; never write a line Open skips
		}
		fmt.Fprintf(&l.buf, "%08x ", crc32.ChecksumIEEE(body))
		l.buf.Write(body)
		l.buf.WriteByte('\n')
		if l.buf.Len() >= flushAt {
			if err := l.write(); err != nil {
				return err
			}
		}
	}
	if err := l.write(); err != nil {
		return err
	}
	if l.buf.Cap() > 2*flushAt {
		l.buf = bytes.Buffer{}
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", l.path, err)
	}
	return nil
}

// write writes what is buffered, after making the file the previous one if it would be full.
func (l *file) write() error {
	if l.buf.Len() == 0 {
		return nil
	}
	if l.size+int64(l.buf.Len()) > l.max && l.size > 0 {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	n, err := l.f.Write(l.buf.Bytes())
	l.size += int64(n)
	l.buf.Reset()
	if err != nil {
		return fmt.Errorf("writing %s: %w", l.path, err)
	}
	return nil
}

// rotate makes the current file the previous one and starts an empty one.
func (l *file) rotate() error {
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", l.path, err)
	}
	if err := os.Rename(l.path, l.path+".old"); err != nil {
		return fmt.Errorf("rotating %s: %w", l.path, err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	l.f, l.size = f, 0
	if d, err := os.Open(filepath.Dir(l.path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func (l *file) close() error { return l.f.Close() }
