package oracle

import (
	"maps"
	"time"
)

// world is the faults in force between two events.
type world struct {
	cut     map[[2]string]bool    // directed: the packets from [0] to [1] are lost
	loss    map[[2]string]float64 // by link (sorted pair): percent lost each way
	latency map[[2]string]delay   // by link (sorted pair): one-way delay each way
	down    map[string]bool       // targets failing their health check
	stopped map[string]bool       // nodes not running
	started map[string]time.Time  // locations started during the run: when
}

// delay is a one-way delay and its variation.
type delay struct{ d, jitter time.Duration }

// pair returns the key of the link between a and b.
func pair(a, b string) [2]string {
	if b < a {
		a, b = b, a
	}
	return [2]string{a, b}
}

// initialWorld returns the world at the start of a run: no fault, every node running except
// the late ones.
func initialWorld(t *Topology) *world {
	w := &world{cut: map[[2]string]bool{}, loss: map[[2]string]float64{}, latency: map[[2]string]delay{},
		down: map[string]bool{}, stopped: map[string]bool{}, started: map[string]time.Time{}}
	for _, n := range t.Nodes {
		if n.Late {
			w.stopped[n.Name] = true
		}
	}
	return w
}

// clone returns a copy of w that events can change.
func (w *world) clone() *world {
	return &world{cut: maps.Clone(w.cut), loss: maps.Clone(w.loss), latency: maps.Clone(w.latency),
		down: maps.Clone(w.down), stopped: maps.Clone(w.stopped), started: maps.Clone(w.started)}
}

// apply changes w by e; regions lists every region (for events that name one region only).
func (w *world) apply(e Event, regions []string) {
	others := func(a, b string) []string {
		if b != "" {
			return []string{b}
		}
		var out []string
		for _, r := range regions {
			if r != a {
				out = append(out, r)
			}
		}
		return out
	}
	switch e.Kind {
	case EventCut:
		for _, b := range others(e.A, e.B) {
			w.cut[[2]string{e.A, b}], w.cut[[2]string{b, e.A}] = true, true
		}
	case EventCutOneWay:
		w.cut[[2]string{e.A, e.B}] = true
	case EventHeal:
		for _, b := range others(e.A, e.B) {
			w.heal(e.A, b)
		}
	case EventHealAll:
		clear(w.cut)
		clear(w.loss)
		clear(w.latency)
	case EventLoss:
		if e.Percent == 0 {
			delete(w.loss, pair(e.A, e.B))
		} else {
			w.loss[pair(e.A, e.B)] = e.Percent
		}
	case EventLatency:
		if e.Delay == 0 && e.Jitter == 0 {
			delete(w.latency, pair(e.A, e.B))
		} else {
			w.latency[pair(e.A, e.B)] = delay{e.Delay, e.Jitter}
		}
	case EventTargetDown:
		w.down[e.Target] = true
	case EventTargetUp:
		delete(w.down, e.Target)
	case EventKill, EventKillLeader:
		if e.Node != "" {
			w.stopped[e.Node] = true
		}
	case EventStart:
		delete(w.stopped, e.Node)
		w.started[e.Node] = e.At
	}
}

// heal restores the link between a and b.
func (w *world) heal(a, b string) {
	delete(w.cut, [2]string{a, b})
	delete(w.cut, [2]string{b, a})
	delete(w.loss, pair(a, b))
	delete(w.latency, pair(a, b))
}

// carries reports whether packets from a to b get through at all (a region reaches itself).
func (w *world) carries(a, b string) bool { return a == b || !w.cut[[2]string{a, b}] }

// lossy returns the loss on the link between a and b, in percent (0 within a region).
func (w *world) lossy(a, b string) float64 {
	if a == b {
		return 0
	}
	return w.loss[pair(a, b)]
}

// delayOf returns the one-way delay between a and b (none within a region).
func (w *world) delayOf(a, b string) delay {
	if a == b {
		return delay{}
	}
	return w.latency[pair(a, b)]
}

// worstDelay returns the longest one-way delay (with its jitter) of any link.
func (w *world) worstDelay() time.Duration {
	var d time.Duration
	for _, l := range w.latency {
		d = max(d, l.d+l.jitter)
	}
	return d
}
