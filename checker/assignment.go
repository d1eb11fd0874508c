package checker

import (
	"errors"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/vigil-dns/vigil/checker/shard"
	"github.com/vigil-dns/vigil/config"
)

// Checks is what an Assignment reads of a configuration (state.State of control/state is one): its regions,
// its checks, and a check by id.
type Checks interface {
	Regions() []string
	Checks() iter.Seq[*config.Check]
	CheckRef(id string) (*config.Check, bool)
}

// Assignment is which checks one checker probes: the plan of every check's shards (shard.Plan)
// kept up to date as the configuration and the membership change, and what the checker was
// last given, the checks it hands off included (NextHandoffs). Its upkeep costs nothing that
// grows with the checks unless something changed: the plan is changed per changed check, and
// recomputed only when the membership moved; the checker is given its checks again only when
// the membership moved, a configuration change touched them (given now, or by the plan), or it
// hands some off.
//
// An Assignment decides and does no I/O: time, the membership and what gossip holds are
// arguments. It is not safe for concurrent use (the node calls it under its lock); its Plan
// is. The zero Assignment has no plan until configured, and gives nothing.
type Assignment struct {
	region, self string
	checks       Checks
	plan         *shard.Plan      // nil: no configuration yet, or one that could not be planned
	members      shard.Membership // the membership the plan was last brought to
	due          bool             // the checker is to be given its checks again
	given        []string         // the checks the checker was last given, handoffs included
	givenSet     map[string]bool
	handoffs     map[string]Handoff
}

// NewAssignment returns the assignment of checker self, a member of region, with no
// configuration yet.
func NewAssignment(region, self string) *Assignment {
	return &Assignment{region: region, self: self}
}

// Plan returns the assignment of every check to its shards (nil: no configuration yet, or one
// that could not be planned). It is safe for concurrent reads; the Assignment changes it.
func (a *Assignment) Plan() *shard.Plan { return a.plan }

// Configure brings the plan to a configuration. changed are the checks that changed since the
// configuration the Assignment holds; whole says that every check may have (a configuration
// taken whole, or changed settings). The plan is changed for the changed checks alone, or built
// afresh over live (the live checkers per region, as gossip shows them) when whole or when
// there is no plan. A check that cannot be planned is left out of it; a plan that cannot be
// built is none (nil), and the checker is given nothing new until a configuration can be
// planned. The errors say which.
func (a *Assignment) Configure(checks Checks, changed []string, whole bool, live shard.Membership) error {
	a.checks = checks
	var errs []error
	if a.plan != nil && !whole {
		for _, id := range changed {
			if c, ok := checks.CheckRef(id); ok {
				errs = append(errs, a.plan.Put(c))
			} else {
				a.plan.Remove(id)
			}
		}
	} else {
		members := a.membership(live)
		plan, err := shard.NewPlanOf(checks.Regions(), checks.Checks(), members)
		if err != nil {
			errs = append(errs, err)
			plan, members = nil, nil
		}
		a.plan, a.members = plan, members
	}
	if !a.due {
		a.due = whole || a.touches(changed)
	}
	return errors.Join(errs...)
}

// touches reports whether a change of the checks ids may change what the checker probes: one
// of them is given to it now, or was. The plan is brought to the change.
func (a *Assignment) touches(ids []string) bool {
	for _, id := range ids {
		if a.givenSet[id] || a.plan == nil || slices.Contains(a.plan.Shard(id, a.region), a.self) {
			return true
		}
	}
	return false
}

// SetMembers brings the plan to live, the live checkers per region as gossip shows them
// (regions the configuration does not name are left out: a plan refuses them). Nothing is
// recomputed when the membership is the one the plan holds.
func (a *Assignment) SetMembers(live shard.Membership) error {
	if a.plan == nil {
		return nil
	}
	members := a.membership(live)
	if maps.EqualFunc(members, a.members, slices.Equal) {
		return nil
	}
	a.members, a.due = members, true
	return a.plan.Update(members)
}

// membership returns live limited to the configuration's regions.
func (a *Assignment) membership(live shard.Membership) shard.Membership {
	m := shard.Membership{}
	for _, r := range a.checks.Regions() {
		if ids, ok := live[r]; ok {
			m[r] = ids
		}
	}
	return m
}

// Due reports whether the checker is to be given its checks again (Give): the membership
// moved, a configuration change touched its checks, or it hands some off. False without a
// plan.
func (a *Assignment) Due() bool {
	return a.plan != nil && (a.due || len(a.handoffs) > 0)
}

// HandingOff reports whether the checker hands off a check (it keeps probing it until its new
// holders report it), so that the caller gives its checks again while their reports come in.
func (a *Assignment) HandingOff() bool { return len(a.handoffs) > 0 }

// Give returns the checks the checker is to probe at now: the plan's for it, then those it
// hands off (NextHandoffs), and remembers them as given. window is the freshness window in
// force; heard says whether checker holder's report of check id counts in this node's gossip
// table at now (there, healthy or unhealthy, fresh); reported whether this checker has a report
// of check id. Nil without a plan.
func (a *Assignment) Give(now time.Time, window time.Duration, heard func(id, holder string) bool, reported func(id string) bool) []config.Check {
	if a.plan == nil {
		return nil
	}
	a.due = false
	planned := a.plan.ChecksFor(a.region, a.self)
	mine := make([]config.Check, 0, len(planned))
	ids := make([]string, 0, len(planned))
	for _, id := range planned {
		if c, ok := a.checks.CheckRef(id); ok {
			mine = append(mine, *c)
			ids = append(ids, id)
		}
	}
	a.handoffs = NextHandoffs(a.handoffs, a.given, ids, now, a.handoffTimes(window), a.covered(heard), reported)
	for _, id := range slices.Sorted(maps.Keys(a.handoffs)) {
		if c, ok := a.checks.CheckRef(id); ok {
			mine = append(mine, *c)
			ids = append(ids, id)
		}
	}
	a.given = ids
	a.givenSet = make(map[string]bool, len(ids))
	for _, id := range ids {
		a.givenSet[id] = true
	}
	return mine
}

// handoffTimes returns the bounds of a check's handoff under the freshness window: ok false
// when the configuration no longer has it probed.
func (a *Assignment) handoffTimes(window time.Duration) func(id string) (HandoffTimes, bool) {
	return func(id string) (HandoffTimes, bool) {
		c, ok := a.checks.CheckRef(id)
		if !ok || c.Protocol == config.ProtocolCalculated || c.Disabled {
			return HandoffTimes{}, false
		}
		return HandoffTimes{Limit: HandoffLimit(c, window), Overlap: max(c.Interval.Std(), window)}, true
	}
}

// covered returns whether every checker of the region that the plan now gives a check, this
// one aside, has a report of it that counts (heard).
func (a *Assignment) covered(heard func(id, holder string) bool) func(id string) bool {
	return func(id string) bool {
		for _, holder := range a.plan.Shard(id, a.region) {
			if holder != a.self && !heard(id, holder) {
				return false
			}
		}
		return true
	}
}
