package verdict

import (
	"slices"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/quorum"
)

// policies holds each distinct policy once, counting the checks that use it: a million checks
// share a handful of policies.
type policies struct {
	index map[quorum.Policy]uint32
	list  []quorum.Policy
	refs  []uint32
	free  []uint32
}

func newPolicies() policies { return policies{index: map[quorum.Policy]uint32{}} }

func (p *policies) ref(pol quorum.Policy) uint32 {
	if i, ok := p.index[pol]; ok {
		p.refs[i]++
		return i
	}
	var i uint32
	if n := len(p.free); n > 0 {
		i = p.free[n-1]
		p.free = p.free[:n-1]
		p.list[i], p.refs[i] = pol, 1
	} else {
		i = uint32(len(p.list))
		p.list = append(p.list, pol)
		p.refs = append(p.refs, 1)
	}
	p.index[pol] = i
	return i
}

func (p *policies) unref(i uint32) {
	p.refs[i]--
	if p.refs[i] == 0 {
		delete(p.index, p.list[i])
		p.free = append(p.free, i)
	}
}

func (p *policies) get(i uint32) quorum.Policy { return p.list[i] }

// Configure installs the checks of doc (nil: none). Only what differs from the installed
// configuration changes: a check added, or one whose policy or children changed, is marked
// to re-decide at the next Advance; a check removed has no verdict any more (Changes says
// so). A change of the freshness window re-classifies every checker. The comparison walks
// the document once; nothing is re-decided that did not change.
func (e *Engine) Configure(doc *config.Document) {
	var checks []config.Check
	window := quorum.Policy{}.Normalize().FreshnessWindow
	var q config.QuorumSettings
	if doc != nil {
		checks, q = doc.Checks, doc.Quorum
		window = quorum.Policy{FreshnessWindow: q.FreshnessWindow.Std()}.Normalize().FreshnessWindow
	}
	if window != e.window {
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
	order := false // a calculated check changed: the evaluation order is computed again
	for x := range checks {
		cfg := &checks[x]
		if prev, dup := e.ids[cfg.ID]; dup && e.checks[prev].flags&flagSeen != 0 {
			continue // a duplicate id: the first one counts, as config.Document.CheckIndex has it
		}
		i, _ := e.checkIndex(cfg.ID, true)
		c := &e.checks[i]
		c.flags |= flagSeen
		added := c.flags&flagConfigured == 0
		if cfg.Protocol == config.ProtocolCalculated {
			next := &calc{ids: cfg.Children, minHealthy: cfg.MinHealthy, inverted: cfg.Inverted, disabled: cfg.Disabled}
			if !added && c.calc != nil && c.calc.equal(next) {
				continue
			}
			e.unconfigure(i, false)
			c = &e.checks[i]
			next.ids = slices.Clone(cfg.Children)
			c.calc = next
			c.flags |= flagConfigured
			e.configured++
			order = true
			e.markCheck(i)
			continue
		}
		pol := quorum.PolicyFor(*cfg, q)
		if !added && c.calc == nil && e.policies.get(c.policy) == pol {
			continue
		}
		if !added && c.calc != nil {
			order = true
		}
		e.unconfigure(i, false)
		c = &e.checks[i]
		c.policy = e.policies.ref(pol)
		c.flags |= flagConfigured
		e.configured++
		e.markCheck(i)
	}
	// Checks the document no longer holds.
	for i := range e.checks {
		c := &e.checks[i]
		if c.flags&flagSeen != 0 {
			c.flags &^= flagSeen
			continue
		}
		if c.flags&flagConfigured == 0 {
			continue
		}
		if c.calc != nil {
			order = true
		}
		e.unconfigure(int32(i), true)
		e.release(int32(i))
	}
	if order {
		e.link(doc)
	}
}

// unconfigure drops check i's configuration. With gone set the check leaves the
// configuration: its verdict is dropped (Changes reports it removed) and the calculated
// checks that combine it are re-decided.
func (e *Engine) unconfigure(i int32, gone bool) {
	c := &e.checks[i]
	if c.flags&flagConfigured == 0 {
		return
	}
	if c.calc == nil {
		e.policies.unref(c.policy)
	}
	c.calc, c.policy = nil, 0
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

// link rebuilds the calculated checks' children, parents and ranks from the evaluation order
// of doc. It walks the document: it runs only when a calculated check was added, removed or
// changed.
func (e *Engine) link(doc *config.Document) {
	old := e.parents
	e.parents = map[int32][]int32{}
	rank := map[string]int32{}
	if doc != nil {
		for r, id := range doc.EvalOrder() {
			rank[id] = int32(r)
		}
	}
	for i := range e.checks {
		c := &e.checks[i]
		if c.calc == nil || c.flags&flagConfigured == 0 {
			continue
		}
		r, ok := rank[c.id]
		if !ok {
			c.flags |= flagNoOrder
			continue
		}
		c.flags &^= flagNoOrder
		c.rank = r
		c.calc.children = c.calc.children[:0]
		for _, id := range c.calc.ids {
			ch, _ := e.checkIndex(id, true)
			c = &e.checks[i] // checkIndex may have grown e.checks
			c.calc.children = append(c.calc.children, ch)
			if ps := e.parents[ch]; len(ps) == 0 || ps[len(ps)-1] != int32(i) {
				e.parents[ch] = append(ps, int32(i))
			}
		}
	}
	// Children no calculated check combines any more may be freed.
	for ch := range old {
		if _, ok := e.parents[ch]; !ok {
			e.release(ch)
		}
	}
}
