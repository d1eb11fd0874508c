package control

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Group commit: the writes that arrive while a raft entry is being committed wait for it and
// are then committed together, as one entry of a batch command. Each costs its share of one
// log write and fsync on every voter, one apply and one wake-up of the watches, instead of
// its own. A write that finds nothing in flight is sent at once, alone, so that a single
// client waits no longer than without batching.

// Bounds of a batch.
const (
	maxBatch      = 512     // commands in one raft entry
	maxBatchBytes = 1 << 20 // encoded bytes of one raft entry of several commands
	writeQueue    = 4096    // writes waiting to be committed
)

// pendingWrite is one write waiting for its commit.
type pendingWrite struct {
	data []byte
	done chan writeResult
}

type writeResult struct {
	index uint64
	err   error
}

// commit sends an encoded command through the group committer and waits for its result.
func (n *Node) commit(data []byte) (uint64, error) {
	w := &pendingWrite{data: data, done: make(chan writeResult, 1)}
	timer := time.NewTimer(n.cfg.ApplyTimeout)
	defer timer.Stop()
	select {
	case n.writes <- w:
	case <-timer.C:
		return 0, fmt.Errorf("%w: %d writes are waiting to be committed", ErrNoLeader, writeQueue)
	case <-n.stopped:
		return 0, fmt.Errorf("%w (the voter is stopping)", ErrNoLeader)
	}
	select {
	case r := <-w.done:
		return r.index, r.err
	case <-n.stopped:
		// The committer answers what it took; a write it never took was not applied.
		select {
		case r := <-w.done:
			return r.index, r.err
		case <-time.After(n.cfg.ApplyTimeout):
			return 0, ErrUnknownOutcome
		}
	}
}

// committer commits the waiting writes, one raft entry at a time, until ctx ends.
func (n *Node) committer(ctx context.Context) {
	defer n.wg.Done()
	for {
		var batch []*pendingWrite
		select {
		case <-ctx.Done():
			n.failWaiting()
			return
		case w := <-n.writes:
			batch = append(batch, w)
		}
		size := len(batch[0].data)
	fill:
		for len(batch) < maxBatch && size < maxBatchBytes {
			select {
			case w := <-n.writes:
				if size+len(w.data) > maxBatchBytes {
					n.commitBatch(batch)
					batch, size = []*pendingWrite{w}, 0
				} else {
					batch = append(batch, w)
				}
				size += len(w.data)
			default:
				break fill
			}
		}
		n.commitBatch(batch)
	}
}

// failWaiting answers every write still waiting when the voter stops.
func (n *Node) failWaiting() {
	for {
		select {
		case w := <-n.writes:
			w.done <- writeResult{err: fmt.Errorf("%w (the voter is stopping)", ErrNoLeader)}
		default:
			return
		}
	}
}

// commitBatch commits the writes as one raft entry (a lone write as itself) and answers each.
func (n *Node) commitBatch(batch []*pendingWrite) {
	data := batch[0].data
	if len(batch) > 1 {
		c := Command{Op: OpBatch, Batch: make([]json.RawMessage, len(batch))}
		for i, w := range batch {
			c.Batch[i] = w.data
		}
		var err error
		if data, err = json.Marshal(c); err != nil {
			for _, w := range batch {
				w.done <- writeResult{err: fmt.Errorf("control: encode batch: %w", err)}
			}
			return
		}
	}
	n.batchSize.Observe(float64(len(batch)))
	f := n.raft.Apply(data, n.cfg.ApplyTimeout)
	if err := f.Error(); err != nil {
		for _, w := range batch {
			w.done <- writeResult{err: raftWriteError(err)}
		}
		return
	}
	res, ok := f.Response().(ApplyResult)
	if !ok {
		for _, w := range batch {
			w.done <- writeResult{err: fmt.Errorf("control: unexpected apply response %T", f.Response())}
		}
		return
	}
	if len(batch) == 1 {
		batch[0].done <- writeResult{res.Index, res.Err}
		return
	}
	for i, w := range batch {
		err := res.Err
		if err == nil && i < len(res.Batch) {
			err = res.Batch[i]
		}
		w.done <- writeResult{res.Index, err}
	}
}
