// Package calibrate measures how much slower than an idle machine this process runs right now,
// so tests derive their timing bounds from the same run.
//
// A test's timing bound holds on an idle machine; on a busy one (other processes, the rest
// of the suite) every thread of the process waits for a CPU, and a bound tuned quietly fails
// with nothing wrong. A Meter, running beside the test, measures two things from inside the
// process, with no constant of any machine:
//
//   - the slowdown: the kernel counts, for every thread, the time it ran and the time it
//     waited runnable for a CPU (/proc/self/task/*/schedstat); (ran+waited)/ran is 1 on an
//     idle machine, about load/cores for threads that compute on a busy one, and far more
//     for threads that wake for a moment at a time (a raft round, a probe, a gossip message
//     each wait behind the other threads' time slices): how much longer the process's work
//     takes;
//   - the lateness: a ticker that should fire every Tick, and how late each tick ran, which is
//     how long a goroutine that should wake waited (timers, probes, heartbeats).
//
// A bound then reads "the idle bound times the slowdown measured meanwhile" (Reading.Scale),
// or "the idle bound plus the lateness measured meanwhile" (Reading.Late, Reading.LateP99),
// and still fails when the code is slow on its own account. Scale is capped (MaxSlowdown):
// past it the machine is too busy for any timing to mean much, and the bound stops growing.
package calibrate

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

const (
	// Tick is the lateness ticker's period.
	Tick = 10 * time.Millisecond
	// schedEvery is how often the threads' scheduler statistics are read.
	schedEvery = 100 * time.Millisecond
	// MaxSlowdown caps the slowdown a Reading scales by: 8 is a 2-core machine at load 16.
	MaxSlowdown = 8.0
	// keep bounds the samples kept: 30 minutes of ticks.
	keep = int(30 * time.Minute / Tick)
)

// sample is one measurement: at its end, At, either a tick's lateness, or how long the
// process's threads ran and waited runnable since the last sample.
type sample struct {
	At          time.Time
	Late        time.Duration
	Ran, Waited time.Duration
}

// meter is the process's one sampler, running while a Meter is open.
var meter struct {
	mu    sync.Mutex
	open  int
	stop  chan struct{}
	done  chan struct{}
	ticks []sample // rings of keep; nextT, nextS are their next slots
	sched []sample
	nextT int
	nextS int
}

// Meter is one test's view of the process's sampler: it reads what was measured since it
// started.
type Meter struct {
	from time.Time
	once sync.Once
}

// Start starts measuring (the sampler runs while any Meter is open); Stop ends it.
func Start() *Meter {
	meter.mu.Lock()
	defer meter.mu.Unlock()
	meter.open++
	if meter.open == 1 {
		meter.stop, meter.done = make(chan struct{}), make(chan struct{})
		go sampleUntil(meter.stop, meter.done)
	}
	return &Meter{from: time.Now()}
}

// Stop stops this Meter; the sampler stops with the last one open.
func (m *Meter) Stop() {
	m.once.Do(func() {
		meter.mu.Lock()
		meter.open--
		var stop, done chan struct{}
		if meter.open == 0 {
			stop, done = meter.stop, meter.done
		}
		meter.mu.Unlock()
		if stop != nil {
			close(stop)
			<-done
		}
	})
}

// Reading is what was measured over a stretch of time.
type Reading struct {
	// Wall is the stretch's length.
	Wall time.Duration
	// Slowdown is the time the process's threads ran and waited runnable over the time
	// they ran: 1 on an idle machine, more on a busy one (see the package's doc). 1 when
	// nothing was measured (no scheduler statistics).
	Slowdown float64
	// Ran and Waited are the process's threads' time on a CPU and waiting for one.
	Ran, Waited time.Duration
	// Late is how long the ticks ran late in all; LateP99 and LateMax the 99th percentile
	// and the longest of one tick's lateness. Ticks counts them.
	Late, LateP99, LateMax time.Duration
	Ticks                  int
}

// Reading returns what was measured since the Meter started.
func (m *Meter) Reading() Reading { return m.Since(m.from) }

// Since returns what was measured since t (at most 30 minutes back).
func (m *Meter) Since(t time.Time) Reading {
	meter.mu.Lock()
	defer meter.mu.Unlock()
	r := Reading{Wall: time.Since(t), Slowdown: 1}
	backFrom(meter.sched, meter.nextS, t, func(s sample) {
		r.Ran, r.Waited = r.Ran+s.Ran, r.Waited+s.Waited
	})
	if r.Ran > 0 {
		r.Slowdown = float64(r.Ran+r.Waited) / float64(r.Ran)
	}
	var lates []time.Duration
	backFrom(meter.ticks, meter.nextT, t, func(s sample) {
		lates = append(lates, s.Late)
		r.Late += s.Late
	})
	if r.Ticks = len(lates); r.Ticks > 0 {
		slices.Sort(lates)
		r.LateP99, r.LateMax = lates[(len(lates)-1)*99/100], lates[len(lates)-1]
	}
	return r
}

// backFrom calls f with the samples of ring (next its oldest once full) taken after t,
// newest first.
func backFrom(ring []sample, next int, t time.Time, f func(sample)) {
	for i := range ring {
		s := ring[(next-1-i+2*len(ring))%len(ring)]
		if !s.At.After(t) {
			return
		}
		f(s)
	}
}

// Scale returns the idle bound d scaled by the slowdown, at most MaxSlowdown times d.
func (r Reading) Scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * min(r.Slowdown, MaxSlowdown))
}

// Within reports whether d, measured since the Meter started, is within the idle bound
// quiet scaled by the slowdown measured meanwhile: the deadline of a wait that should take
// quiet on an idle machine.
func (m *Meter) Within(quiet time.Duration) bool {
	meter.mu.Lock()
	var ran, waited time.Duration
	backFrom(meter.sched, meter.nextS, m.from, func(s sample) { ran, waited = ran+s.Ran, waited+s.Waited })
	meter.mu.Unlock()
	r := Reading{Wall: time.Since(m.from), Slowdown: 1}
	if ran > 0 {
		r.Slowdown = float64(ran+waited) / float64(ran)
	}
	return r.Wall <= r.Scale(quiet)
}

// String says the reading in a test's log.
func (r Reading) String() string {
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("slowdown %.1f over %v (threads ran %v, waited for a CPU %v), ticks late %v in all, p99 %v, max %v",
		r.Slowdown, ms(r.Wall), ms(r.Ran), ms(r.Waited), ms(r.Late), ms(r.LateP99), ms(r.LateMax))
}

// sampleUntil samples until stop is closed, then closes done.
func sampleUntil(stop, done chan struct{}) {
	var wg sync.WaitGroup
	defer func() { wg.Wait(); close(done) }()
	wg.Go(func() { schedUntil(stop) })
	t := time.NewTicker(Tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			now := time.Now() // the ticker's time is when it was due, not when it ran
			record(&meter.ticks, &meter.nextT, sample{At: now, Late: max(0, now.Sub(last)-Tick)})
			last = now
		}
	}
}

// schedUntil reads the threads' scheduler statistics every schedEvery until stop is closed.
func schedUntil(stop chan struct{}) {
	var sr schedReader
	sr.read()
	t := time.NewTicker(schedEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if ran, waited, ok := sr.read(); ok {
				record(&meter.sched, &meter.nextS, sample{At: time.Now(), Ran: ran, Waited: waited})
			}
		}
	}
}

// record adds s to the ring at *next.
func record(ring *[]sample, next *int, s sample) {
	meter.mu.Lock()
	defer meter.mu.Unlock()
	if len(*ring) < keep {
		*ring = append(*ring, s)
		return
	}
	(*ring)[*next] = s
	*next = (*next + 1) % keep
}
