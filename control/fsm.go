package control

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/control/state"
)

// ApplyResult is what the state machine returns for one command: the index it produced, or
// why it was rejected (the state is then unchanged).
type ApplyResult struct {
	// Index is the raft index of the command.
	Index uint64
	// Err is nil when the command was applied.
	Err error
	// Batch holds the error of each command of a batch, in order (nil: applied).
	Batch []error
}

// FSM is the raft state machine: it applies commands to the State, records which items each
// one changed, and publishes each new State to readers and blocking watches. It applies a
// batch of committed entries at once (raft.BatchingFSM) and publishes once per batch.
type FSM struct {
	log     *slog.Logger
	shards  state.ShardKeeper
	changes *state.ChangeLog

	applied prometheus.Observer // the time of each ApplyBatch; nil: not timed

	mu      sync.Mutex
	state   *state.State
	changed chan struct{} // closed and replaced on every new state
}

// NewFSM returns an empty state machine. alloc may be nil: zones then get no stored shard.
func NewFSM(alloc state.AllocatorFactory, log *slog.Logger) *FSM {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &FSM{log: log, shards: state.ShardKeeper{Factory: alloc}, changes: state.NewChangeLog(0),
		state: state.Empty(), changed: make(chan struct{})}
}

// State returns the current state. The caller must not change it.
func (f *FSM) State() *state.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// Wait returns the first state whose index exceeds index, or the current state when ctx
// ends first (as Consul's blocking queries do).
func (f *FSM) Wait(ctx context.Context, index uint64) *state.State {
	for {
		f.mu.Lock()
		s, ch := f.state, f.changed
		f.mu.Unlock()
		if s.Index > index {
			return s
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return s
		}
	}
}

// Changes returns what changed after index from up to the state s (which the caller read
// from this FSM); Full when the change log does not reach back that far.
func (f *FSM) Changes(from uint64, s *state.State) state.Changes {
	keys, ok := f.changes.Since(from, s.Index)
	if !ok {
		return state.Changes{Full: true}
	}
	return state.ChangesOf(keys)
}

// delta returns the items that changed after from, as s holds them; nil when the change
// log does not reach back to from.
func (f *FSM) delta(from uint64, s *state.State) *state.Delta {
	keys, ok := f.changes.Since(from, s.Index)
	if !ok {
		return nil
	}
	return s.Delta(from, keys)
}

func (f *FSM) publish(s *state.State) {
	f.mu.Lock()
	f.state = s
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// Apply applies one committed log entry and returns an ApplyResult.
func (f *FSM) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed log entries in order, each on the state the one before it
// made, and publishes the last state once: a reader or watch wakes once per batch.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	if f.applied != nil {
		defer func(t0 time.Time) { f.applied.Observe(time.Since(t0).Seconds()) }(time.Now())
	}
	out := make([]any, len(logs))
	cur := f.State()
	start := cur
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		if subs, ok := batchCommands(l.Data); ok {
			out[i], cur = f.applyBatch(cur, subs, l.Index)
			continue
		}
		var c state.Command
		if err := decodeCommand(l.Data, &c); err != nil {
			f.log.Error("control: undecodable command in the raft log", "index", l.Index, "err", err)
			out[i] = ApplyResult{Index: l.Index, Err: fmt.Errorf("control: decode command: %w", err)}
			continue
		}
		if c.Op == state.OpBatch {
			out[i], cur = f.applyBatch(cur, slices.Values(c.Batch), l.Index)
			continue
		}
		next, err := f.applyCommand(cur, &c, l.Index)
		out[i] = ApplyResult{Index: l.Index, Err: err}
		if err == nil {
			cur = next
		}
	}
	if cur != start {
		f.publish(cur)
	}
	return out
}

// applyBatch applies the commands of a batch entry in order, each on its own (each in
// either encoding), and returns the entry's result and the state after it.
func (f *FSM) applyBatch(cur *state.State, subs iter.Seq[json.RawMessage], index uint64) (ApplyResult, *state.State) {
	res := ApplyResult{Index: index}
	for raw := range subs {
		var sub state.Command
		err := decodeCommand(raw, &sub)
		switch {
		case err != nil:
			err = fmt.Errorf("control: decode command: %w", err)
		case sub.Op == state.OpBatch:
			err = errors.New("control: a batch inside a batch")
		default:
			var next *state.State
			if next, err = f.applyCommand(cur, &sub, index); err == nil {
				cur = next
			}
		}
		res.Batch = append(res.Batch, err)
	}
	return res, cur
}

// batchHead and batchTail frame the commands of a batch entry as the committer encodes it
// (json.Marshal of a Command with only Op and Batch).
const (
	batchHead = `{"op":"batch","batch":[`
	batchTail = `]}`
)

// batchCommands returns the commands of a batch entry encoded as the committer encodes it,
// without decoding the entry as a whole first (which would scan every command twice more and
// copy it); ok is false for any other entry, which the caller decodes as a whole. Each
// command's JSON is checked when it is decoded.
func batchCommands(data []byte) (iter.Seq[json.RawMessage], bool) {
	if !bytes.HasPrefix(data, []byte(batchHead)) || !bytes.HasSuffix(data, []byte(batchTail)) {
		return nil, false
	}
	body := data[len(batchHead) : len(data)-len(batchTail)]
	var ends []int
	depth, inString, escaped := 0, false, false
	for i, b := range body {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
		case b == '}' || b == ']':
			depth--
			if depth < 0 {
				return nil, false
			}
		case b == ',' && depth == 0:
			ends = append(ends, i)
		}
	}
	if depth != 0 || inString || len(body) == 0 {
		return nil, false
	}
	ends = append(ends, len(body))
	return func(yield func(json.RawMessage) bool) {
		from := 0
		for _, end := range ends {
			if !yield(body[from:end]) {
				return
			}
			from = end + 1
		}
	}, true
}

// applyCommand applies one command to cur at index, with its name-server shards, and records
// what it changed.
func (f *FSM) applyCommand(cur *state.State, c *state.Command, index uint64) (*state.State, error) {
	e, err := state.ApplyCommand(cur, c, index)
	if err != nil {
		return nil, err
	}
	if err := f.shards.Update(e); err != nil {
		return nil, err
	}
	f.changes.Add(index, e.Keys())
	return e.Next, nil
}

// Snapshot captures the current state; Persist streams it.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) { return fsmSnapshot{f.State()}, nil }

// Restore replaces the state with a snapshot's, read one item at a time. Readers that were
// behind it get the whole state next.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	r, err := snapshotReader(rc)
	if err != nil {
		return err
	}
	s, err := state.ReadState(r)
	if err != nil {
		return fmt.Errorf("control: decode snapshot: %w", err)
	}
	if err := f.shards.Restore(s); err != nil {
		return err
	}
	f.changes.Reset(s.Index)
	f.publish(s)
	return nil
}

// snapshotReader returns the JSON of a snapshot: gzip-compressed, or plain (as snapshots
// written before compression are).
func snapshotReader(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(2)
	if err != nil {
		return nil, fmt.Errorf("control: read snapshot: %w", err)
	}
	if magic[0] != 0x1f || magic[1] != 0x8b {
		return br, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("control: read snapshot: %w", err)
	}
	return zr, nil
}

type fsmSnapshot struct{ s *state.State }

// Persist streams the state as gzip-compressed JSON.
func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	zw, err := gzip.NewWriterLevel(sink, gzip.BestSpeed)
	if err == nil {
		if err = s.s.WriteJSON(zw); err == nil {
			err = zw.Close()
		}
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("control: write snapshot: %w", err)
	}
	return sink.Close()
}

func (fsmSnapshot) Release() {}
