package location

import (
	"slices"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// TestOverridesApply: the overrides in force at a moment force checks and drain records; Apply
// returns what changed since the last moment (a check or zone that starts or ends) and when
// the next one in force ends; an override past its expiry is no longer in force.
func TestOverridesApply(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	list := []*state.Override{
		{Kind: state.OverrideHealthy, Check: "web", Expires: t0.Add(time.Minute)},
		{Kind: state.OverrideUnhealthy, Check: "db", Expires: t0.Add(2 * time.Minute)},
		{Kind: state.OverrideDrain, Zone: "example.com.", Name: "www.example.com.", Type: config.TypeA, Value: "192.0.2.1", Expires: t0.Add(3 * time.Minute)},
		{Kind: state.OverrideHealthy, Check: "old", Expires: t0},
	}
	var o Overrides
	if !o.Set(list) || o.Set(slices.Clone(list)) {
		t.Fatal("Set: the first list is no change, or the same list again is one")
	}
	for _, c := range []struct {
		at            time.Duration
		checks, zones []string
		next          time.Duration // 0: none in force
		web, db       bool          // served, for a verdict unhealthy (web) and healthy (db)
	}{
		{0, []string{"db", "web"}, []string{"example.com."}, time.Minute, true, false},
		{30 * time.Second, nil, nil, time.Minute, true, false},
		{time.Minute, []string{"web"}, nil, 2 * time.Minute, false, false},
		{2 * time.Minute, []string{"db"}, nil, 3 * time.Minute, false, true},
		{3 * time.Minute, nil, []string{"example.com."}, 0, false, true},
	} {
		checks, zones, next := o.Apply(t0.Add(c.at))
		slices.Sort(checks)
		var wantNext time.Time
		if c.next != 0 {
			wantNext = t0.Add(c.next)
		}
		if !slices.Equal(checks, c.checks) || !slices.Equal(zones, c.zones) || !next.Equal(wantNext) {
			t.Errorf("at %v: checks %v zones %v next %v, want %v %v %v", c.at, checks, zones, next, c.checks, c.zones, wantNext)
		}
		if web, db := o.Serve("web", false), o.Serve("db", true); web != c.web || db != c.db {
			t.Errorf("at %v: web served %v, db %v, want %v %v", c.at, web, db, c.web, c.db)
		}
	}
}

// TestOverridesDrainZone: a drained record is given DrainCheck in a copy of its zone; the
// other records, and the zone given, are left as they are.
func TestOverridesDrainZone(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	z := config.Zone{Name: "Example.com", RecordSets: []config.RecordSet{
		{Name: "www", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.1", HealthCheck: "web"}, {Value: "192.0.2.2", HealthCheck: "web"}}},
		{Name: "api", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.1"}}},
	}}
	var o Overrides
	if got := o.DrainZone(z); &got.RecordSets[0] != &z.RecordSets[0] {
		t.Error("a zone with nothing drained was copied")
	}
	o.Set([]*state.Override{{Kind: state.OverrideDrain, Zone: "example.com.", Name: "www.example.com.", Type: config.TypeA, Value: "192.0.2.1", Expires: t0.Add(time.Minute)}})
	o.Apply(t0)
	got := o.DrainZone(z)
	var checks []string
	for _, rs := range got.RecordSets {
		for _, r := range rs.Records {
			checks = append(checks, r.HealthCheck)
		}
	}
	if want := []string{DrainCheck, "web", ""}; !slices.Equal(checks, want) {
		t.Errorf("health checks %v, want %v", checks, want)
	}
	if z.RecordSets[0].Records[0].HealthCheck != "web" {
		t.Error("the zone given was changed")
	}
}
