package agent

import (
	"context"
	"time"

	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/location"
)

// DrainCheck is the health check a drained record is given in the zones a location serves
// (location.DrainCheck).
const DrainCheck = location.DrainCheck

// overrideLayer is the maintenance overrides as this location applies them (what is in force
// at a moment and what it changes is location.Overrides's to decide), and wake, which tells
// runOverrides that the list changed (capacity 1).
type overrideLayer struct {
	location.Overrides
	wake chan struct{}
}

// serve returns what check id is served as: forced, or verdict.
func (o *overrideLayer) serve(id string, verdict bool) bool { return o.Serve(id, verdict) }

// setOverrides takes the overrides of s, the configuration just installed, and has them
// applied when they changed.
func (n *Node) setOverrides(s *state.State) {
	if n.dns == nil {
		return
	}
	if n.ovr.Set(s.Overrides()) {
		select {
		case n.ovr.wake <- struct{}{}:
		default:
		}
	}
}

// runOverrides applies the overrides when they change and when one ends, until ctx ends.
func (n *Node) runOverrides(ctx context.Context) error {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		next := n.applyOverrides(time.Now())
		d := time.Hour
		if !next.IsZero() {
			d = max(time.Until(next), 0)
		}
		t.Reset(d)
		select {
		case <-ctx.Done():
			return nil
		case <-n.ovr.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// applyOverrides brings DNS to the overrides in force at now: the verdicts of the checks
// whose forcing changed are installed again, the zones whose drained records changed are
// compiled again. It returns when the next override ends (zero: none).
func (n *Node) applyOverrides(now time.Time) time.Time {
	checks, zones, next := n.ovr.Apply(now)
	if len(checks) > 0 {
		n.reinstallVerdicts(checks)
	}
	if len(zones) > 0 {
		n.mu.Lock()
		s := n.state
		n.mu.Unlock()
		if s != nil {
			n.installZones(s, state.Changes{Zones: zones})
		}
	}
	if len(checks)+len(zones) > 0 {
		n.log.Info("node: maintenance overrides applied", "checks", len(checks), "zones", len(zones), "next_end", next)
	}
	return next
}

// reinstallVerdicts installs in DNS what the checks are served as now: forced, or their
// verdict.
func (n *Node) reinstallVerdicts(checks []string) {
	l := &n.loc
	l.mu.Lock()
	defer l.mu.Unlock()
	patch := make([]location.VerdictChange, 0, len(checks))
	for _, id := range checks {
		v, ok := l.engine.Verdict(id, nil)
		patch = append(patch, location.VerdictChange{Check: id, Healthy: n.ovr.serve(id, !ok || v.Serving())})
	}
	n.dns.PatchVerdicts(patch)
}

// Overrides returns the maintenance overrides this location holds (each in force until its
// Expires, by this location's clock); nil without the location role. The caller must not
// change them.
func (n *Node) Overrides() []*state.Override {
	return n.ovr.List()
}
