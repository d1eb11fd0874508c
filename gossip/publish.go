package gossip

import (
	"errors"
	"fmt"
)

// Publish sets this checker's report for check. An unchanged report sends nothing: the
// heartbeat already says the checker is making progress.
func (n *Pool) Publish(check string, e Entry) error {
	if err := validID("check", check); err != nil {
		return err
	}
	if e.Status >= statusEnd {
		return fmt.Errorf("gossip: publish %s: unknown status %d", check, e.Status)
	}
	return n.change(func(o *ownRow) (delta, bool) { return o.set(check, e) })
}

// Withdraw removes this checker's report for check, e.g. when it left the check's shard.
func (n *Pool) Withdraw(check string) error {
	if err := validID("check", check); err != nil {
		return err
	}
	return n.change(func(o *ownRow) (delta, bool) { return o.withdraw(check) })
}

// WithdrawAll removes every report of this checker, e.g. when it cannot reach anything.
func (n *Pool) WithdrawAll() error {
	return n.change(func(o *ownRow) (delta, bool) { return o.withdrawAll() })
}

func (n *Pool) change(f func(*ownRow) (delta, bool)) error {
	if n.own == nil {
		return errors.New("gossip: only a checker publishes reports")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	d, changed := f(n.own)
	if !changed {
		return nil
	}
	n.table.applyDelta(d, n.cfg.Now())
	n.queueDelta(d.header, d.check, encodeDelta(d))
	n.gauges()
	return nil
}

// queueDelta queues an encoded delta for gossip; a newer delta for the same check of the same
// checker replaces it in the queue. Called with n.mu held.
func (n *Pool) queueDelta(h header, check string, msg []byte) {
	name := "d/" + h.checker + "/" + check
	if check == "" {
		name = "a/" + h.checker
	}
	n.deltas.QueueBroadcast(newBroadcast(name, msg))
	if n.deltas.NumQueued() > maxDeltaQueue {
		n.deltas.Prune(maxDeltaQueue)
	}
}

// gauges refreshes the table gauges. Called with n.mu held.
func (n *Pool) gauges() {
	r, c := n.table.Len()
	n.m.reports.Set(float64(r))
	n.m.checkers.Set(float64(c))
}
