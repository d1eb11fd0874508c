package control

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/hashicorp/raft"
)

// ApplyResult is what the state machine returns for one command: the index it produced, or
// why it was rejected (the state is then unchanged).
type ApplyResult struct {
	// Index is the raft index of the command.
	Index uint64
	// Err is nil when the command was applied.
	Err error
}

// FSM is the raft state machine: it applies commands to the State and publishes each new
// State to readers and blocking watches.
type FSM struct {
	log    *slog.Logger
	shards shardKeeper

	mu      sync.Mutex
	state   *State
	changed chan struct{} // closed and replaced on every new state
}

// NewFSM returns an empty state machine. alloc may be nil: zones then get no stored shard.
func NewFSM(alloc AllocatorFactory, log *slog.Logger) *FSM {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &FSM{log: log, shards: shardKeeper{factory: alloc}, state: emptyState(), changed: make(chan struct{})}
}

// State returns the current state. The caller must not change it.
func (f *FSM) State() *State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// Wait returns the first state whose index exceeds index, or the current state when ctx
// ends first (as Consul's blocking queries do).
func (f *FSM) Wait(ctx context.Context, index uint64) *State {
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

func (f *FSM) publish(s *State) {
	f.mu.Lock()
	f.state = s
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// Apply applies one committed log entry and returns an ApplyResult.
func (f *FSM) Apply(l *raft.Log) any {
	var c Command
	if err := json.Unmarshal(l.Data, &c); err != nil {
		f.log.Error("control: undecodable command in the raft log", "index", l.Index, "err", err)
		return ApplyResult{Index: l.Index, Err: fmt.Errorf("control: decode command: %w", err)}
	}
	cur := f.State()
	next, err := applyCommand(cur, &c, l.Index)
	if err != nil {
		return ApplyResult{Index: l.Index, Err: err}
	}
	shards, err := f.shards.reconcile(cur.Shards, &next.Document)
	if err != nil {
		return ApplyResult{Index: l.Index, Err: err}
	}
	next.Shards = shards
	f.publish(next)
	return ApplyResult{Index: l.Index}
}

// Snapshot captures the current state; Persist writes it as JSON.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) { return fsmSnapshot{f.State()}, nil }

// Restore replaces the state with a snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	s := emptyState()
	if err := json.NewDecoder(rc).Decode(s); err != nil {
		return fmt.Errorf("control: decode snapshot: %w", err)
	}
	if err := f.shards.restore(&s.Document, s.Shards); err != nil {
		return err
	}
	f.publish(s)
	return nil
}

type fsmSnapshot struct{ s *State }

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s.s); err != nil {
		sink.Cancel()
		return fmt.Errorf("control: write snapshot: %w", err)
	}
	return sink.Close()
}

func (fsmSnapshot) Release() {}
