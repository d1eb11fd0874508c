package control

import (
	"encoding/json"
	"fmt"
	"sync"
)

// Group commit: the writes that arrive while a raft entry is being committed wait for it and
// are then committed together, as one entry of a batch command. Each costs its share of one
// log write and fsync on every voter, one apply and one wake-up of the watches, instead of
// its own. There is no committing goroutine: a write that finds nothing in flight commits at
// once, itself (so that a single client waits for nothing more than its own commit); when
// it is done and writes are waiting, it hands the turn to the first of them, which commits
// them all.

// Bounds of a batch.
const (
	maxBatch      = 512     // commands in one raft entry
	maxBatchBytes = 1 << 20 // encoded bytes of one raft entry of several commands
	writeQueue    = 4096    // writes waiting to be committed
)

// committer holds the writes waiting for their turn.
type committer struct {
	mu    sync.Mutex
	busy  bool // a write is committing a batch
	queue []*pendingWrite
}

// pendingWrite is one write waiting for its commit.
type pendingWrite struct {
	data []byte
	done chan writeResult
}

// writeResult is a write's outcome, or (turn) the signal that the write commits next.
type writeResult struct {
	index uint64
	err   error
	turn  bool
}

// commit commits an encoded command, alone or with those waiting beside it, and returns its
// index.
func (n *Node) commit(data []byte) (uint64, error) {
	w := &pendingWrite{data: data, done: make(chan writeResult, 1)}
	c := &n.committer
	c.mu.Lock()
	if len(c.queue) >= writeQueue {
		c.mu.Unlock()
		return 0, fmt.Errorf("%w: %d writes are waiting to be committed", ErrNoLeader, writeQueue)
	}
	c.queue = append(c.queue, w)
	lead := !c.busy
	c.busy = true
	c.mu.Unlock()
	if !lead {
		r := <-w.done
		if !r.turn {
			return r.index, r.err
		}
	}
	// This write's turn: it is first in the queue. Commit the batch it heads, then hand the
	// turn on.
	c.mu.Lock()
	batch := c.take()
	c.mu.Unlock()
	n.commitBatch(batch)
	c.mu.Lock()
	if len(c.queue) == 0 {
		c.busy = false
	} else {
		c.queue[0].done <- writeResult{turn: true}
	}
	c.mu.Unlock()
	r := <-w.done
	return r.index, r.err
}

// take removes the next batch from the front of the queue: at least one write, at most
// maxBatch or maxBatchBytes. The caller holds c.mu.
func (c *committer) take() []*pendingWrite {
	n, size := 0, 0
	for n < len(c.queue) && n < maxBatch && (n == 0 || size+len(c.queue[n].data) <= maxBatchBytes) {
		size += len(c.queue[n].data)
		n++
	}
	batch := make([]*pendingWrite, n)
	copy(batch, c.queue)
	rest := copy(c.queue, c.queue[n:])
	clear(c.queue[rest:])
	c.queue = c.queue[:rest]
	return batch
}

// commitBatch commits the writes as one raft entry (a lone write as itself) and answers each.
func (n *Node) commitBatch(batch []*pendingWrite) {
	answer := func(i int, r writeResult) { batch[i].done <- r }
	data := batch[0].data
	if len(batch) > 1 {
		c := Command{Op: OpBatch, Batch: make([]json.RawMessage, len(batch))}
		for i, w := range batch {
			c.Batch[i] = w.data
		}
		var err error
		if data, err = json.Marshal(c); err != nil {
			for i := range batch {
				answer(i, writeResult{err: fmt.Errorf("control: encode batch: %w", err)})
			}
			return
		}
	}
	n.batchSize.Observe(float64(len(batch)))
	f := n.raft.Apply(data, n.cfg.ApplyTimeout)
	if err := f.Error(); err != nil {
		for i := range batch {
			answer(i, writeResult{err: raftWriteError(err)})
		}
		return
	}
	res, ok := f.Response().(ApplyResult)
	if !ok {
		for i := range batch {
			answer(i, writeResult{err: fmt.Errorf("control: unexpected apply response %T", f.Response())})
		}
		return
	}
	for i := range batch {
		err := res.Err
		if err == nil && len(batch) > 1 && i < len(res.Batch) {
			err = res.Batch[i]
		}
		answer(i, writeResult{index: res.Index, err: err})
	}
}
