package sim

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/lab/oracle"
)

// The in-process networks share the harness's process: when it is not scheduled (a machine
// busy with other work) or stopped to collect garbage, every node, timer and query stops with
// it, and a location "answers late" only because nothing ran. The stall monitor measures
// this from inside: a ticker that should fire every stallTick. A stall is a stretch of late
// ticks (each gap over slowGap) in which the harness lost more than stallMin in all: one long
// gap, or many short ones on a machine so busy that the process runs a few milliseconds in
// every hundred (at load 20-25 on 2 cores, a 1s DNS query timed out with no single gap over
// stallMin). The oracle allows the stalls' total on top of its slack and excuses a query
// unanswered while one lasted (oracle.Run.Stalls); the report says both.
const (
	stallTick = 10 * time.Millisecond
	slowGap   = 5 * stallTick
	stallMin  = 250 * time.Millisecond
	maxStalls = 1000
)

// stallMonitor records the harness's stalls.
type stallMonitor struct {
	mu     sync.Mutex
	stalls []oracle.Stall
	more   int // stalls beyond maxStalls, not kept
	// stretch is the run of late ticks going on (From zero: none), lost the time lost in it.
	stretch oracle.Stall
	lost    time.Duration
}

// run measures until ctx ends.
func (m *stallMonitor) run(ctx context.Context) {
	t := time.NewTicker(stallTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			m.tick(last, time.Now())
			m.tick(time.Now(), time.Now()) // ends a stretch still going on
			return
		case now := <-t.C:
			now = time.Now() // the ticker's time is when it was due, not when it ran
			m.tick(last, now)
			last = now
		}
	}
}

// tick takes the gap between two ticks, last and now: a late tick extends the stretch of
// late ticks, one on time ends it, a stall if it lost more than stallMin.
func (m *stallMonitor) tick(last, now time.Time) {
	if gap := now.Sub(last); gap > slowGap {
		if m.stretch.From.IsZero() {
			m.stretch.From = last
		}
		m.stretch.To, m.lost = now, m.lost+gap-stallTick
		return
	}
	if !m.stretch.From.IsZero() && m.lost > stallMin {
		m.add(m.stretch)
	}
	m.stretch, m.lost = oracle.Stall{}, 0
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

// recorded returns the stalls kept, in order and those that overlap merged (the monitor's
// and the control probe's), and how many more there were.
func (m *stallMonitor) recorded() ([]oracle.Stall, int) {
	m.mu.Lock()
	in := append([]oracle.Stall(nil), m.stalls...)
	more := m.more
	m.mu.Unlock()
	slices.SortFunc(in, func(a, b oracle.Stall) int { return a.From.Compare(b.From) })
	var out []oracle.Stall
	for _, s := range in {
		if n := len(out); n > 0 && !s.From.After(out[n-1].To) {
			if s.To.After(out[n-1].To) {
				out[n-1].To = s.To
			}
			continue
		}
		out = append(out, s)
	}
	return out, more
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
