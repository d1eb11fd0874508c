package node

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/location"
)

// DrainCheck is the health check a drained record is given in the zones a location serves:
// always served as unhealthy, so the record is answered only in last resort. Its name cannot
// be a configured check's (':' is not allowed in check ids), and explanations show it.
const DrainCheck = "override:drain"

// overrideLayer is the maintenance overrides as this location applies them, by its own
// clock: the checks forced healthy or unhealthy and the records drained that are in force.
type overrideLayer struct {
	mu      sync.Mutex
	list    []*control.Override
	forced  map[string]bool            // check id → served healthy
	drained map[string]map[string]bool // apex → drainKey of each record drained
	wake    chan struct{}              // the list changed (capacity 1)
}

func drainKey(owner string, typ config.RecordType, value string) string {
	return owner + "\x00" + string(typ) + "\x00" + value
}

// setOverrides takes the overrides of s, the configuration just installed, and has them
// applied when they changed.
func (n *Node) setOverrides(s *control.State) {
	if n.dns == nil {
		return
	}
	o := &n.ovr
	list := s.Overrides()
	o.mu.Lock()
	same := reflect.DeepEqual(list, o.list)
	o.list = list
	o.mu.Unlock()
	if !same {
		select {
		case o.wake <- struct{}{}:
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
func (n *Node) applyOverrides(now time.Time) (next time.Time) {
	o := &n.ovr
	o.mu.Lock()
	forced := map[string]bool{}
	drained := map[string]map[string]bool{}
	for _, ov := range o.list {
		if !ov.Active(now) {
			continue
		}
		if next.IsZero() || ov.Expires.Before(next) {
			next = ov.Expires
		}
		switch ov.Kind {
		case control.OverrideHealthy, control.OverrideUnhealthy:
			forced[ov.Check] = ov.Kind == control.OverrideHealthy
		case control.OverrideDrain:
			if drained[ov.Zone] == nil {
				drained[ov.Zone] = map[string]bool{}
			}
			drained[ov.Zone][drainKey(ov.Name, ov.Type, ov.Value)] = true
		}
	}
	var checks []string
	for id, v := range forced {
		if old, ok := o.forced[id]; !ok || old != v {
			checks = append(checks, id)
		}
	}
	for id := range o.forced {
		if _, ok := forced[id]; !ok {
			checks = append(checks, id)
		}
	}
	var zones []string
	for apex := range drained {
		if !maps.Equal(drained[apex], o.drained[apex]) {
			zones = append(zones, apex)
		}
	}
	for apex := range o.drained {
		if _, ok := drained[apex]; !ok {
			zones = append(zones, apex)
		}
	}
	o.forced, o.drained = forced, drained
	o.mu.Unlock()
	if len(checks) > 0 {
		n.reinstallVerdicts(checks)
	}
	if len(zones) > 0 {
		n.mu.Lock()
		s := n.state
		n.mu.Unlock()
		if s != nil {
			n.installZones(s, control.Changes{Zones: zones})
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

// serve returns what check id is served as: forced, or verdict.
func (o *overrideLayer) serve(id string, verdict bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if v, ok := o.forced[id]; ok {
		return v
	}
	return verdict
}

// drainZone returns z with its drained records given DrainCheck (z itself when none is).
func (o *overrideLayer) drainZone(z config.Zone) config.Zone {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := o.drained[control.CanonicalZone(z.Name)]
	if len(d) == 0 {
		return z
	}
	sets := slices.Clone(z.RecordSets)
	for i := range sets {
		rs := &sets[i]
		copied := false
		for j, r := range rs.Records {
			if !d[drainKey(control.CanonicalOwner(z.Name, rs.Name), rs.Type, r.Value)] {
				continue
			}
			if !copied {
				rs.Records, copied = slices.Clone(rs.Records), true
			}
			rs.Records[j].HealthCheck = DrainCheck
		}
	}
	z.RecordSets = sets
	return z
}

// Overrides returns the maintenance overrides this location holds (each in force until its
// Expires, by this location's clock); nil without the location role. The caller must not
// change them.
func (n *Node) Overrides() []*control.Override {
	n.ovr.mu.Lock()
	defer n.ovr.mu.Unlock()
	return n.ovr.list
}
