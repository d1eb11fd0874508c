package checker

// event is one thing a Checker emits: a report, or a change of its self-health.
type event struct {
	report Report
	self   *SelfHealth
}

// emitLocked queues a self-health change (if any) and reports, in that order, releases c.mu,
// which the caller holds, and delivers what is queued.
//
// Events are queued under c.mu in the order their sequence numbers were given, and only the
// goroutine holding emitMu delivers them, so the callbacks see them in Seq order, one at a
// time. emitMu is never awaited while c.mu is held, and a callback that calls back into the
// Checker (Reports, even SetChecks) only queues: whoever is delivering picks its events up.
func (c *Checker) emitLocked(reports []Report, self *SelfHealth) {
	if self != nil {
		c.pending = append(c.pending, event{self: self})
	}
	for _, r := range reports {
		c.pending = append(c.pending, event{report: r})
	}
	c.mu.Unlock()
	c.deliver()
}

// deliver hands queued events to the callbacks until none is left, unless another goroutine
// is already doing so.
func (c *Checker) deliver() {
	var batch []event
	for {
		if !c.emitMu.TryLock() {
			return // the holder delivers ours too: it looks again after unlocking
		}
		for {
			c.mu.Lock()
			batch, c.pending = c.pending, batch[:0]
			c.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			for _, e := range batch {
				switch {
				case e.self != nil && c.onSelf != nil:
					c.onSelf(*e.self)
				case e.self == nil && c.onReport != nil:
					c.onReport(e.report)
				}
			}
			clear(batch)
		}
		c.emitMu.Unlock()
		c.mu.Lock()
		more := len(c.pending) > 0
		c.mu.Unlock()
		if !more {
			return
		}
	}
}
