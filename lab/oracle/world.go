package oracle

import (
	"maps"
	"time"

	"github.com/vigil-dns/vigil/regions"
)

// world is the faults in force between two events.
type world struct {
	links   *regions.Faults      // the links' cuts, loss and latency, by direction
	down    map[string]bool      // targets failing their health check
	stopped map[string]bool      // nodes not running
	started map[string]time.Time // locations started during the run: when
}

// initialWorld returns the world at the start of a run: no fault, every node running except
// the late ones.
func initialWorld(t *Topology) *world {
	w := &world{links: regions.NewFaults(t.Regions...), down: map[string]bool{}, stopped: map[string]bool{},
		started: map[string]time.Time{}}
	for _, n := range t.Nodes {
		if n.Late {
			w.stopped[n.Name] = true
		}
	}
	return w
}

// clone returns a copy of w that events can change.
func (w *world) clone() *world {
	return &world{links: w.links.Clone(), down: maps.Clone(w.down), stopped: maps.Clone(w.stopped),
		started: maps.Clone(w.started)}
}

// apply changes w by e (Validate has checked it).
func (w *world) apply(e Event) {
	switch e.Kind {
	case EventLink:
		_ = w.links.Apply(e.Link)
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

// carries reports whether packets from a to b get through at all (a region reaches itself).
func (w *world) carries(a, b string) bool { return a == b || w.links.Carries(a, b) }

// lossy returns the loss on the link from a to b, in percent (0 within a region).
func (w *world) lossy(a, b string) float64 {
	if a == b {
		return 0
	}
	return w.links.Of(regions.Link{From: a, To: b}).Loss
}

// delayOf returns the one-way delay from a to b and its jitter (none within a region).
func (w *world) delayOf(a, b string) regions.State {
	if a == b {
		return regions.State{}
	}
	return w.links.Of(regions.Link{From: a, To: b})
}

// worstDelay returns the longest one-way delay (with its jitter) of any link.
func (w *world) worstDelay() time.Duration {
	var d time.Duration
	for _, l := range w.links.Faulty() {
		s := w.links.Of(l)
		d = max(d, s.Delay+s.Jitter)
	}
	return d
}
