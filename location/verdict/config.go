package verdict

import (
	"iter"
	"maps"
	"slices"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/slots"
	"github.com/vigil-dns/vigil/quorum"
)

// policies holds each distinct policy once, counting the checks that use it: a million checks
// share a handful of policies.
type policies struct {
	index map[quorum.Policy]uint32
	list  []quorum.Policy
	refs  []uint32
	free  slots.Free[uint32]
}

func newPolicies() policies { return policies{index: map[quorum.Policy]uint32{}} }

func (p *policies) ref(pol quorum.Policy) uint32 {
	if i, ok := p.index[pol]; ok {
		p.refs[i]++
		return i
	}
	i := p.free.Take()
	*slots.Place(&p.list, i), *slots.Place(&p.refs, i) = pol, 1
	p.index[pol] = i
	return i
}

func (p *policies) unref(i uint32) {
	p.refs[i]--
	if p.refs[i] == 0 {
		delete(p.index, p.list[i])
		p.free.Release(i)
	}
}

func (p *policies) get(i uint32) quorum.Policy { return p.list[i] }

// Configure installs the checks of doc (nil: none), as ConfigureAll does: a check that
// appears twice counts once, the first time, as config.Document.CheckIndex has it.
func (e *Engine) Configure(doc *config.Document) {
	if doc == nil {
		e.ConfigureAll(config.QuorumSettings{}, nil)
		return
	}
	e.ConfigureAll(doc.Quorum, func(yield func(*config.Check) bool) {
		for x := range doc.Checks {
			if !yield(&doc.Checks[x]) {
				return
			}
		}
	})
}

// ConfigureAll installs the quorum settings q and exactly the checks that all yields (nil:
// none). Only what differs from the installed configuration changes: a check added, or one
// whose policy or children changed, is marked to re-decide at the next Advance; a check
// removed has no verdict any more (Changes says so). A change of the freshness window
// re-classifies every checker. It walks every check once: it is for a configuration taken
// whole (the first one, a change of settings); ConfigureChecks takes a change at its cost.
// The engine keeps no reference to the checks.
func (e *Engine) ConfigureAll(q config.QuorumSettings, all iter.Seq[*config.Check]) {
	e.setQuorum(q)
	order := false // a calculated check changed: the evaluation order is computed again
	if all != nil {
		for cfg := range all {
			if prev, dup := e.ids.Get(cfg.ID); dup && e.checks[prev].flags&flagSeen != 0 {
				continue // a duplicate id: the first one counts
			}
			i := e.put(cfg, &order)
			e.checks[i].flags |= flagSeen
		}
	}
	// Checks the configuration no longer holds.
	for i := range e.checks {
		c := &e.checks[i]
		if c.flags&flagSeen != 0 {
			c.flags &^= flagSeen
			continue
		}
		e.drop(int32(i), &order)
	}
	if order {
		e.link()
	}
	// A configuration taken whole grew the table by append, up to a quarter more than it
	// holds: keep it at its size.
	if len(e.checks) < cap(e.checks)-cap(e.checks)/16 {
		e.checks = slices.Clone(e.checks)
	}
}

// ConfigureChecks installs the present configuration of the checks named by ids: get returns
// a check's configuration, or false when it left the configuration. Checks it does not name
// keep theirs, and the quorum settings are those of the last ConfigureAll (a change of
// settings is taken whole). It costs the checks named, and the calculated checks' order when
// one of those changed; as ConfigureAll, it re-decides only what differs.
func (e *Engine) ConfigureChecks(ids []string, get func(id string) (*config.Check, bool)) {
	order := false
	for _, id := range ids {
		if cfg, ok := get(id); ok {
			e.put(cfg, &order)
		} else if i, ok := e.ids.Get(id); ok {
			e.drop(i, &order)
		}
	}
	if order {
		e.link()
	}
}

// setQuorum installs the quorum settings the checks' policies are made with.
func (e *Engine) setQuorum(q config.QuorumSettings) {
	e.quorum = q
	window := quorum.FreshnessWindow(q)
	if window == e.window {
		return
	}
	e.window = window
	// Every checker's deadline moved: classify them all again.
	e.fresh.h = e.fresh.h[:0]
	for k := range e.checkers {
		if e.checkers[k].id != "" {
			e.checkers[k].queued = false
			e.markChecker(int32(k))
		}
	}
}

// put installs one check's configuration and returns its index; it marks the check to
// re-decide if that differs from what the engine holds, and sets *order when a calculated
// check was added, removed or changed.
func (e *Engine) put(cfg *config.Check, order *bool) int32 {
	i, _ := e.checkIndex(cfg.ID, true)
	c := &e.checks[i]
	added := c.flags&flagConfigured == 0
	if cfg.Protocol == config.ProtocolCalculated {
		next := &calc{ids: cfg.Children, minHealthy: cfg.MinHealthy, inverted: cfg.Inverted, disabled: cfg.Disabled}
		if !added && c.isCalc() && e.calcs[i].equal(next) {
			return i
		}
		e.unconfigure(i, false)
		c = &e.checks[i]
		next.ids = slices.Clone(cfg.Children)
		c.policy = calcPolicy
		c.flags |= flagConfigured
		e.configured++
		e.calcs[i] = next
		*order = true
		e.markCheck(i)
		return i
	}
	pol := quorum.PolicyFor(*cfg, e.quorum)
	if !added && !c.isCalc() && e.policies.get(c.policy) == pol {
		return i
	}
	if !added && c.isCalc() {
		*order = true
	}
	e.unconfigure(i, false)
	c = &e.checks[i]
	c.policy = e.policies.ref(pol)
	c.flags |= flagConfigured
	e.configured++
	e.markCheck(i)
	return i
}

// drop takes check i out of the configuration, if it is in it.
func (e *Engine) drop(i int32, order *bool) {
	c := &e.checks[i]
	if c.flags&flagConfigured == 0 {
		return
	}
	if c.isCalc() {
		*order = true
	}
	e.unconfigure(i, true)
	e.release(i)
}

// unconfigure drops check i's configuration. With gone set the check leaves the
// configuration: its verdict is dropped (Changes reports it removed) and the calculated
// checks that combine it are re-decided.
func (e *Engine) unconfigure(i int32, gone bool) {
	c := &e.checks[i]
	if c.flags&flagConfigured == 0 {
		return
	}
	if !c.isCalc() {
		e.policies.unref(c.policy)
	} else {
		delete(e.calcs, i)
	}
	c.policy = 0
	c.flags &^= flagConfigured | flagNoOrder
	e.configured--
	if !gone {
		return
	}
	if c.flags&flagEvaluated != 0 {
		e.counts[c.state]--
		e.removed = append(e.removed, c.id)
	}
	c.flags &^= flagEvaluated | flagChanged
	c.state, c.rule, c.since, c.held, c.at = quorum.StateUnknown, quorum.RuleNone, 0, 0, 0
	c.changes = [3]uint32{}
	e.holds.remove(i)
	for _, p := range e.parents[i] {
		e.markCheck(p)
	}
}

// link rebuilds the calculated checks' children, parents and ranks: a calculated check is
// ranked after every calculated check it combines, and one that combines a cycle (its own
// result, through others) is never decided. It walks the calculated checks only: it runs
// when one of them was added, removed or changed.
func (e *Engine) link() {
	old := e.parents
	e.parents = map[int32][]int32{}
	for i, cc := range e.calcs {
		cc.children = cc.children[:0]
		for _, id := range cc.ids {
			ch, _ := e.checkIndex(id, true)
			cc.children = append(cc.children, ch)
			if ps := e.parents[ch]; len(ps) == 0 || ps[len(ps)-1] != i {
				e.parents[ch] = append(ps, i)
			}
		}
	}
	// Ranks: children first, by a depth-first walk (0 unseen, 1 on the path, 2 ranked, 3 in
	// or above a cycle).
	mark := make(map[int32]uint8, len(e.calcs))
	next := int32(0)
	var place func(i int32) bool
	place = func(i int32) bool {
		switch mark[i] {
		case 1, 3:
			return false
		case 2:
			return true
		}
		mark[i] = 1
		ok := true
		for _, ch := range e.calcs[i].children {
			if e.checks[ch].isCalc() && !place(ch) {
				ok = false
			}
		}
		c := &e.checks[i]
		if !ok {
			mark[i] = 3
			c.flags |= flagNoOrder
			return false
		}
		mark[i] = 2
		c.flags &^= flagNoOrder
		e.calcs[i].rank = next
		next++
		return true
	}
	for _, i := range slices.Sorted(maps.Keys(e.calcs)) {
		place(i)
	}
	// Children no calculated check combines any more may be freed.
	for ch := range old {
		if _, ok := e.parents[ch]; !ok {
			e.release(ch)
		}
	}
}
