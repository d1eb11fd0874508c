package verdict

import (
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/quorum"
)

// Next returns when the next timer falls due: a checker going stale or a hold running out.
// ok is false when no timer is set. Marked inputs are not timers: call Advance after them.
func (e *Engine) Next() (at time.Time, ok bool) {
	t := int64(0)
	if f, fok := e.fresh.next(); fok {
		t, ok = f.at, true
	}
	if h, hok := e.holds.next(); hok && (!ok || h.at < t) {
		t, ok = h.at, true
	}
	if !ok {
		return time.Time{}, false
	}
	return e.clock.time(t), true
}

// Advance fires the timers due by now and re-decides, at now, every check marked by the
// inputs since the last Advance or by those timers, calculated checks after their children.
func (e *Engine) Advance(now time.Time) {
	n := e.clock.stamp(now)
	e.now = n
	for _, k := range e.dirtyCKs {
		ck := &e.checkers[k]
		ck.dirty = false
		e.refresh(k, n)
	}
	e.dirtyCKs = e.dirtyCKs[:0]
	for {
		f, ok := e.fresh.next()
		if !ok || f.at > n {
			break
		}
		e.fresh.pop()
		ck := &e.checkers[f.id]
		if ck.gen != f.gen || ck.id == "" || !ck.queued || ck.due != f.at {
			continue // freed or moved since
		}
		ck.queued = false
		e.refresh(f.id, n)
	}
	for {
		h, ok := e.holds.next()
		if !ok || h.at > n {
			break
		}
		e.holds.pop()
		e.markCheck(h.id)
	}
	if len(e.dirty) == 0 {
		return
	}
	e.stats.Advances++
	for x := 0; x < len(e.dirty); x++ {
		i := e.dirty[x]
		c := &e.checks[i]
		if c.flags&flagDirty == 0 {
			continue // listed twice: freed and taken again since
		}
		c.flags &^= flagDirty
		if c.flags&flagConfigured == 0 || c.flags&flagNoOrder != 0 {
			continue
		}
		if c.isCalc() {
			e.enqueue(i)
			continue
		}
		e.decide(i, n)
	}
	e.dirty = emptied(e.dirty)
	for e.queue.len() > 0 {
		q := e.queue.pop()
		c := &e.checks[q.id]
		if c.flags&flagQueued == 0 {
			continue // freed since
		}
		c.flags &^= flagQueued
		if c.flags&flagConfigured != 0 && c.flags&flagNoOrder == 0 {
			e.decide(q.id, n)
		}
	}
}

// refresh re-classifies checker k at now: a change of freshness marks its checks, and a fresh
// checker keeps an entry in the timers for the moment it would go stale.
func (e *Engine) refresh(k int32, now int64) {
	ck := &e.checkers[k]
	fresh := e.isFresh(ck.progress, now)
	if fresh != ck.fresh {
		ck.fresh = fresh
		for _, i := range ck.checks {
			if e.checks[i].votedBy(k) {
				e.markCheck(i)
			}
		}
	}
	// The moment to look again is when the window has passed since the progress. Progress
	// only moves forward while fresh, so an entry already queued falls due early and moves
	// then (O(1) a heartbeat); one that would fall due late is replaced. (A checker still
	// fresh past its window, which quorum's rule never allows, waits for its next progress.)
	if due := ck.progress + int64(e.window) + 1; fresh && due > now && (!ck.queued || due < ck.due) {
		ck.queued, ck.due = true, due
		e.fresh.push(entry{at: due, id: k, gen: ck.gen})
	}
}

// enqueue queues calculated check i to re-decide after its children.
func (e *Engine) enqueue(i int32) {
	c := &e.checks[i]
	if c.flags&flagQueued != 0 || c.flags&flagConfigured == 0 || c.flags&flagNoOrder != 0 {
		return
	}
	c.flags |= flagQueued
	e.queue.push(entry{at: int64(e.calcs[i].rank), id: i})
}

// decide re-decides check i at now with quorum's rule and records what changed.
func (e *Engine) decide(i int32, now int64) {
	c := &e.checks[i]
	v := e.evaluate(i, nil, now)
	e.stats.Evaluations++
	first := c.flags&flagEvaluated == 0
	old := c.state
	c.flags |= flagEvaluated
	c.state, c.rule = v.State, v.Rule
	c.since, c.held, c.at = e.clock.stamp(v.Since), e.clock.stamp(v.HeldSince), now
	if v.Rule == quorum.RuleHeld {
		e.holds.set(i, c.held+int64(v.Hold))
	} else {
		e.holds.remove(i)
	}
	if !first && old == v.State {
		return
	}
	if !first {
		e.counts[old]--
	}
	e.counts[v.State]++
	c.changes[v.State]++
	e.noteChanged(i)
	if old != v.State {
		for _, p := range e.parents[i] {
			e.enqueue(p)
		}
	}
}

// noteChanged lists check i among the changes to hand out.
func (e *Engine) noteChanged(i int32) {
	c := &e.checks[i]
	if c.flags&flagChanged == 0 {
		c.flags |= flagChanged
		e.changed = append(e.changed, i)
	}
}

// evaluate computes check i's verdict at now from what the engine holds, with quorum's rule;
// expected only fills in the evidence. The previous verdict is the one the engine holds.
func (e *Engine) evaluate(i int32, expected []string, now int64) quorum.Verdict {
	c := &e.checks[i]
	prev := e.prev(c)
	at := e.clock.time(now)
	if c.isCalc() {
		cc := e.calcs[i]
		return quorum.Combine(cc.minHealthy, e.children(cc), cc.inverted, cc.disabled, prev, at)
	}
	return quorum.Evaluate(e.policies.get(c.policy), e.reports(c), expected, prev, at)
}

// prev returns the verdict check c holds, as quorum takes it back.
func (e *Engine) prev(c *check) quorum.Verdict {
	if c.flags&flagEvaluated == 0 {
		return quorum.Verdict{}
	}
	return quorum.Verdict{State: c.state, Rule: c.rule, At: e.clock.time(c.at), Since: e.clock.time(c.since),
		HeldSince: e.clock.time(c.held)}
}

// reports returns check c's reports with a status, as quorum counts them (a scratch slice,
// valid until the next call).
func (e *Engine) reports(c *check) []quorum.Report {
	rs := e.scratch[:0]
	for _, v := range c.votes {
		if v.status() == checker.StatusUnknown {
			continue
		}
		ck := &e.checkers[v.checker()]
		rs = append(rs, quorum.Report{Checker: ck.id, Region: ck.region, Healthy: v.status() == checker.StatusHealthy,
			Latency: time.Duration(v.latency) * time.Microsecond, LastProgress: e.clock.time(ck.progress)})
	}
	e.scratch = rs
	return rs
}

// children returns the verdicts of a calculated check's children (a scratch slice).
func (e *Engine) children(cc *calc) []quorum.Verdict {
	vs := e.kids[:0]
	for _, ch := range cc.children {
		var v quorum.Verdict
		if c := &e.checks[ch]; c.flags&flagConfigured != 0 && c.flags&flagEvaluated != 0 {
			v = e.prev(c)
		}
		vs = append(vs, v)
	}
	e.kids = vs
	return vs
}
