package checker

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// job is one probe handed to a worker.
type job struct {
	s     *slot
	check *config.Check
	due   time.Time
	// returns is Checker.returns when the probe started: a probe that started before the
	// checker's latest return from isolation describes the outage that is over.
	returns uint64
}

// Run probes the assigned checks until ctx ends, then waits for the probes in flight, withdraws
// every report and returns. One goroutine dispatches due checks in due-time order to
// Concurrency workers; a check whose previous probe is still in flight when it is due again is
// skipped for that interval, so one check never has more than one probe in flight.
func (c *Checker) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.running {
		c.mu.Unlock()
		return errors.New("checker: already running")
	}
	c.running = true
	c.mu.Unlock()

	work := make(chan job)
	var wg sync.WaitGroup
	for range c.conc {
		wg.Go(func() { c.worker(ctx, work) })
	}
	c.dispatch(ctx, work)
	close(work)
	wg.Wait()
	c.prober.CloseIdle()

	// Stopped: withdraw every report and forget every state, so that a later Run starts
	// as a fresh checker does.
	c.mu.Lock()
	var out []Report
	for _, s := range c.slots {
		if s.reported {
			out = append(out, c.withdrawLocked(s, WithdrawStopped))
		}
		s.rf, s.last = RiseFall{}, Result{}
	}
	c.self = newSelfTracker(c.self.policy, c.self.canaries)
	c.metrics.selfHealthy.Set(1)
	c.running = false
	c.emitLocked(out, nil)
	return nil
}

// dispatch hands due checks to the workers until ctx ends.
func (c *Checker) dispatch(ctx context.Context, work chan<- job) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		j, wait := c.nextJob(time.Now())
		if j.s != nil {
			select {
			case work <- j:
				continue
			case <-ctx.Done():
				c.mu.Lock()
				j.s.inFlight = false
				c.mu.Unlock()
				return
			}
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-c.wake:
		case <-ctx.Done():
			return
		}
	}
}

// nextJob takes the next due check off the front of the queue, moving it to its next due
// time, or says how long to wait for one.
func (c *Checker) nextJob(now time.Time) (job, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.queue) > 0 {
		s := c.queue[0]
		if s.next.After(now) {
			return job{}, s.next.Sub(now)
		}
		due := s.next
		s.next = nextDue(due, now, s.check.Interval.Std())
		heap.Fix(&c.queue, 0)
		if s.inFlight {
			c.metrics.skipped.Inc()
			continue
		}
		s.inFlight = true
		return job{s: s, check: s.check, due: due, returns: c.returns}, 0
	}
	return job{}, time.Hour
}

// worker runs probes until work is closed.
func (c *Checker) worker(ctx context.Context, work <-chan job) {
	for j := range work {
		check := j.check
		start := time.Now()
		c.metrics.lag.Observe(start.Sub(j.due).Seconds())
		c.metrics.inFlight.Inc()
		res := c.prober.Probe(ctx, check)
		c.metrics.inFlight.Dec()
		res.Lag = start.Sub(j.due)
		if ended(ctx, time.Now()) {
			// Cut short by shutdown: says nothing about the target.
			c.mu.Lock()
			j.s.inFlight = false
			c.mu.Unlock()
			continue
		}
		c.metrics.observe(string(check.Protocol), &res)
		c.finish(j.s, check, &res, j.returns)
	}
}

// ended reports whether ctx is done or, at now, past its deadline. A probe cut short by its
// run's deadline fails at that instant (its connection's deadline is the same), possibly
// before the context's own timer has marked the context done.
func ended(ctx context.Context, now time.Time) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !now.Before(dl)
}

// finish applies a probe result: self-health first, then the check's rise/fall, and emits
// what changed. returns is Checker.returns when the probe started.
func (c *Checker) finish(s *slot, check *config.Check, res *Result, returns uint64) {
	if c.onResult != nil && !s.canary {
		c.onResult(check.ID, *res)
	}
	c.mu.Lock()
	s.inFlight = false
	if s.removed || (s.check != check && !sameProbe(s.check, check)) {
		// Unassigned, or its probe changed, while the probe ran: the result describes
		// nothing current.
		c.mu.Unlock()
		return
	}
	if returns != c.returns {
		// Started while the checker was isolated and finished after it came back: a timeout
		// here is the checker's own outage, not the target's, and would turn the check (whose
		// state starts over) unhealthy at once.
		c.mu.Unlock()
		return
	}
	check = s.check // the current thresholds apply
	var out []Report
	var self *SelfHealth
	target := ""
	if reachability(res.Healthy, res.Reason) < 0 {
		target = hostPort(check.Target.Host, check.Target.Port)
	}
	if c.self.observe(check.ID, target, s.canary, res.Healthy, res.Reason) {
		h := c.self.health()
		self = &h
		if c.self.isolated {
			c.metrics.selfHealthy.Set(0)
			for _, o := range c.slots {
				if o.reported {
					out = append(out, c.withdrawLocked(o, WithdrawIsolated))
				}
			}
		} else {
			// Back: start every check over, as a checker that has just started.
			c.metrics.selfHealthy.Set(1)
			c.returns++
			for _, o := range c.slots {
				o.rf, o.heldAt = RiseFall{}, 0
			}
		}
	}
	if !s.canary && !c.self.isolated {
		s.last = *res
		next, changed := s.rf.Next(res.Healthy, check.FailureThreshold, check.SuccessThreshold)
		if changed && next.Status == StatusUnhealthy && c.self.hold(&s.heldAt) {
			next.Status, changed = s.rf.Status, false // held: see selfTracker.hold
		}
		s.rf = next
		if changed {
			s.reported = true
			out = append(out, c.stampLocked(s.report()))
		}
	}
	if out == nil && self == nil {
		c.mu.Unlock()
		return
	}
	if self != nil {
		if self.Healthy {
			c.log.Info("checker: reachable again; reports resume", "checker", c.name)
		} else {
			c.log.Warn("checker: isolated; withdrawing reports", "checker", c.name, "reason", self.Reason, "withdrawn", len(out))
		}
	}
	c.emitLocked(out, self)
}
