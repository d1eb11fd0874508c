package control

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/control/state"
)

// Group commit: the writes that arrive while a raft entry is being committed wait for it and
// are then committed together, as one entry of a batch command. Each costs its share of one
// log write and fsync on every voter, one apply and one wake-up of the watches, instead of
// its own. There is no committing goroutine: a write that finds nothing in flight commits at
// once, itself (so that a single client waits for nothing more than its own commit); when
// it is done and writes are waiting, it hands the turn to the first of them, which commits
// them all.

//
// A write that takes the turn from a batch of several writes (handed it, or arriving within
// defaultLinger of the end of that batch: so under concurrent load, never a lone client's) first
// waits, at most defaultLinger, until as many writes are waiting as were in play then: the clients
// that batch answered are about to write again, and a batch that takes them all costs one
// entry (its sync on every voter, its round trips, its wake-ups) instead of several. The
// wait costs no CPU; a lone writer never waits.

// Bounds of a batch.
const (
	maxBatch      = 512     // commands in one raft entry
	maxBatchBytes = 1 << 20 // encoded bytes of one raft entry of several commands
	writeQueue    = 4096    // writes waiting to be committed
	defaultLinger = 2 * time.Millisecond
)

// committer holds the writes waiting for their turn.
type committer struct {
	mu    sync.Mutex
	busy  bool // a write is committing a batch
	queue []*pendingWrite
	// lingerFor is the longest wait for writes (0: defaultLinger).
	lingerFor time.Duration
	// want and full: a write lingering for want writes to wait is told by full's closing.
	want int
	full chan struct{}
	// last is the size of the batch that ended at lastEnd leaving no write waiting.
	last    int
	lastEnd time.Time
}

// pendingWrite is one write waiting for its commit.
type pendingWrite struct {
	data  []byte
	done  chan writeResult
	since time.Time // when it arrived
}

// writeResult is a write's outcome, or (turn) the signal that the write commits next, after
// a batch of after writes.
type writeResult struct {
	index uint64
	err   error
	turn  bool
	after int
}

// commit commits an encoded command, alone or with those waiting beside it, and returns its
// index.
func (n *Server) commit(data []byte) (uint64, error) {
	w := &pendingWrite{data: data, done: make(chan writeResult, 1), since: time.Now()}
	c := &n.committer
	c.mu.Lock()
	if len(c.queue) >= writeQueue {
		c.mu.Unlock()
		return 0, fmt.Errorf("%w: %d writes are waiting to be committed", ErrNoLeader, writeQueue)
	}
	c.enqueue(w)
	lead := !c.busy
	c.busy = true
	after := 0
	if lead && time.Since(c.lastEnd) < c.lingerTime() {
		after = c.last // the clients of a batch that just ended are writing again
	}
	c.mu.Unlock()
	if !lead {
		r := <-w.done
		if !r.turn {
			return r.index, r.err
		}
		after = r.after
	}
	c.linger(after)
	// This write's turn: it is first in the queue. Commit the batch it heads, then hand the
	// turn on.
	c.mu.Lock()
	batch := c.take()
	c.mu.Unlock()
	n.commitBatch(batch)
	c.mu.Lock()
	if len(c.queue) == 0 {
		c.busy = false
		c.last, c.lastEnd = len(batch), time.Now()
	} else {
		c.queue[0].done <- writeResult{turn: true, after: len(batch) + len(c.queue)}
	}
	c.mu.Unlock()
	r := <-w.done
	return r.index, r.err
}

// enqueue adds a write to the queue and wakes the write lingering for it. The caller holds
// c.mu.
func (c *committer) enqueue(w *pendingWrite) {
	c.queue = append(c.queue, w)
	if c.full != nil && len(c.queue) >= c.want {
		close(c.full)
		c.full = nil
	}
}

// lingerTime is the longest wait for writes.
func (c *committer) lingerTime() time.Duration {
	if c.lingerFor > 0 {
		return c.lingerFor
	}
	return defaultLinger
}

// linger waits, at most lingerTime, until want writes are waiting (the turn's holder is one of
// them), when the batch before held several.
func (c *committer) linger(want int) {
	want = min(want, maxBatch)
	if want < 2 {
		return
	}
	c.mu.Lock()
	if len(c.queue) >= want {
		c.mu.Unlock()
		return
	}
	full := make(chan struct{})
	c.want, c.full = want, full
	c.mu.Unlock()
	t := time.NewTimer(c.lingerTime())
	defer t.Stop()
	select {
	case <-full:
	case <-t.C:
		c.mu.Lock()
		if c.full == full {
			c.full = nil
		}
		c.mu.Unlock()
	}
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
func (n *Server) commitBatch(batch []*pendingWrite) {
	answer := func(i int, r writeResult) { batch[i].done <- r }
	data := batch[0].data
	binaryBatch := false
	for _, w := range batch {
		binaryBatch = binaryBatch || isBinaryCommand(w.data)
	}
	if len(batch) > 1 && binaryBatch {
		// A binary command is written only when every voter reads the binary encoding.
		subs := make([][]byte, len(batch))
		for i, w := range batch {
			subs[i] = w.data
		}
		data = encodeBatchBinary(subs)
	} else if len(batch) > 1 {
		c := state.Command{Op: state.OpBatch, Batch: make([]json.RawMessage, len(batch))}
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
	t0 := time.Now()
	queue := n.stages.WithLabelValues(stageQueue)
	for _, w := range batch {
		queue.Observe(t0.Sub(w.since).Seconds())
	}
	f := n.raft.Apply(data, n.cfg.ApplyTimeout)
	err := f.Error()
	n.stages.WithLabelValues(stageRaft).Observe(time.Since(t0).Seconds())
	if err != nil {
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
