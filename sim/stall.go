package sim

import (
	"context"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/oracle"
)

// The in-process networks share the harness's process: when it is not scheduled (a machine
// busy with other work) or stopped to collect garbage, every node, timer and query stops with
// it, and a location "answers late" only because nothing ran. The stall monitor measures
// this from inside: a ticker that should fire every stallTick, each gap over stallMin between
// two of its ticks a stall. The oracle allows the stalls' total on top of its slack and
// excuses a query unanswered while one lasted (oracle.Run.Stalls); the report says both.
const (
	stallTick = 10 * time.Millisecond
	stallMin  = 250 * time.Millisecond
	maxStalls = 1000
)

// stallMonitor records the harness's stalls.
type stallMonitor struct {
	mu     sync.Mutex
	stalls []oracle.Stall
	more   int // stalls beyond maxStalls, not kept
}

// run measures until ctx ends.
func (m *stallMonitor) run(ctx context.Context) {
	t := time.NewTicker(stallTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			now = time.Now() // the ticker's time is when it was due, not when it ran
			if gap := now.Sub(last); gap > stallMin {
				m.add(oracle.Stall{From: last, To: now})
			}
			last = now
		}
	}
}

func (m *stallMonitor) add(s oracle.Stall) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.stalls) == maxStalls {
		m.more++
		return
	}
	m.stalls = append(m.stalls, s)
}

// recorded returns the stalls kept and how many more there were.
func (m *stallMonitor) recorded() ([]oracle.Stall, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]oracle.Stall(nil), m.stalls...), m.more
}

// since returns how long the harness stalled after t, in the stalls recorded so far (a stall
// still going on is not yet recorded).
func (m *stallMonitor) since(t time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var d time.Duration
	for _, s := range m.stalls {
		if s.To.After(t) {
			d += s.To.Sub(later(s.From, t))
		}
	}
	return d
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
