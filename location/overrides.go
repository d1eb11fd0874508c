package location

import (
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// DrainCheck is the health check a drained record is given in the zones a location serves:
// always served as unhealthy, so the record is answered only in last resort. Its name cannot
// be a configured check's (':' is not allowed in check ids), and explanations show it.
const DrainCheck = "override:drain"

// Overrides is the maintenance overrides as a location applies them, by its own clock: the
// checks forced healthy or unhealthy and the records drained that are in force. Set gives it
// the configuration's overrides, Apply brings it to a moment, Serve and DrainZone say what a
// location serves under it. It decides and does no I/O; it is safe for concurrent use.
type Overrides struct {
	mu      sync.Mutex
	list    []*state.Override
	forced  map[string]bool            // check id → served healthy
	drained map[string]map[string]bool // apex → drainKey of each record drained
}

func drainKey(owner string, typ config.RecordType, value string) string {
	return owner + "\x00" + string(typ) + "\x00" + value
}

// Set takes the overrides of the configuration in use. It reports whether they changed (then
// Apply is due).
func (o *Overrides) Set(list []*state.Override) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	same := reflect.DeepEqual(list, o.list)
	o.list = list
	return !same
}

// List returns the overrides held (each in force until its Expires); the caller must not
// change them.
func (o *Overrides) List() []*state.Override {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.list
}

// Apply brings the overrides in force to now. It returns the checks whose forcing changed
// (their verdicts to install again), the zones whose drained records changed (to compile
// again), and when the next override in force ends (zero: none).
func (o *Overrides) Apply(now time.Time) (checks, zones []string, next time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
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
		case state.OverrideHealthy, state.OverrideUnhealthy:
			forced[ov.Check] = ov.Kind == state.OverrideHealthy
		case state.OverrideDrain:
			if drained[ov.Zone] == nil {
				drained[ov.Zone] = map[string]bool{}
			}
			drained[ov.Zone][drainKey(ov.Name, ov.Type, ov.Value)] = true
		}
	}
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
	return checks, zones, next
}

// Serve returns what check id is served as: forced, or verdict.
func (o *Overrides) Serve(id string, verdict bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if v, ok := o.forced[id]; ok {
		return v
	}
	return verdict
}

// Drains reports whether an override drains a record of the zone named zone.
func (o *Overrides) Drains(zone string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.drained[state.CanonicalZone(zone)]) > 0
}

// DrainZone returns z with its drained records given DrainCheck (z itself when none is).
func (o *Overrides) DrainZone(z config.Zone) config.Zone {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := o.drained[state.CanonicalZone(z.Name)]
	if len(d) == 0 {
		return z
	}
	sets := slices.Clone(z.RecordSets)
	for i := range sets {
		rs := &sets[i]
		copied := false
		for j, r := range rs.Records {
			if !d[drainKey(state.CanonicalOwner(z.Name, rs.Name), rs.Type, r.Value)] {
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
