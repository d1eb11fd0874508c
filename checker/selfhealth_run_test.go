package checker

import (
	"context"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// cuttableDialer is the real net.Dialer behind a switch that takes the checker's own network
// down: while down, every dial fails as an unplugged host's would, and so does every read
// and write on the connections it opened before (which probes may reuse).
type cuttableDialer struct {
	down atomic.Bool
	// blackhole makes a dial, read or write made while down hang until its deadline, as
	// behind a link that drops packets, instead of failing at once.
	blackhole bool
	d         net.Dialer
}

func (c *cuttableDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if c.down.Load() {
		if c.blackhole {
			<-ctx.Done()
			return nil, &net.OpError{Op: "dial", Net: network, Err: ctx.Err()}
		}
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ENETUNREACH}
	}
	conn, err := c.d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: conn, d: c, changed: make(chan struct{})}, nil
}

// cutConn is a connection of a cuttableDialer.
type cutConn struct {
	net.Conn
	d        *cuttableDialer
	mu       sync.Mutex
	deadline time.Time
	changed  chan struct{} // closed when the deadline changes
}

func (c *cutConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

// cut returns the error of an operation while the network is down, after the deadline
// when it is a black hole.
func (c *cutConn) cut(op string) error {
	if !c.d.blackhole {
		return &net.OpError{Op: op, Net: "tcp", Err: syscall.ENETUNREACH}
	}
	for {
		c.mu.Lock()
		dl, changed := c.deadline, c.changed
		c.mu.Unlock()
		if !dl.IsZero() && !time.Now().Before(dl) {
			return &net.OpError{Op: op, Net: "tcp", Err: os.ErrDeadlineExceeded}
		}
		var wait <-chan time.Time
		if !dl.IsZero() {
			wait = time.After(time.Until(dl))
		}
		select {
		case <-wait:
		case <-changed:
		}
	}
}

func (c *cutConn) Read(b []byte) (int, error) {
	if c.d.down.Load() {
		return 0, c.cut("read")
	}
	return c.Conn.Read(b)
}

func (c *cutConn) Write(b []byte) (int, error) {
	if c.d.down.Load() {
		return 0, c.cut("write")
	}
	return c.Conn.Write(b)
}

// TestIsolatedCheckerWithdraws cuts the checker's own network: it must withdraw its reports
// (and say why) instead of declaring every endpoint unhealthy, and report afresh when the
// network is back.
func TestIsolatedCheckerWithdraws(t *testing.T) {
	t.Parallel()
	dialer := &cuttableDialer{}
	// Default isolation policy (8 failures across 3 targets) and a failure threshold of 2:
	// each check fails about twice before the checker can tell that it is isolated, so
	// without holding suspect failures every check would be declared unhealthy first.
	c, rec, names := startBehind(t, dialer, func(*config.Check) {},
		func(c *config.Check) { c.FailureThreshold = 2 })
	before := len(rec.snapshot())

	dialer.down.Store(true)
	rec.waitFor(t, 5*time.Second, "isolation and withdrawals", func(rs []Report, ss []SelfHealth) bool {
		return len(ss) == 1 && !ss[0].Healthy &&
			all(rs, names, func(r Report) bool { return r.Withdrawn && r.Withdraw == WithdrawIsolated })
	})
	for _, r := range rec.snapshot()[before:] {
		if r.Status == StatusUnhealthy && !r.Withdrawn {
			t.Errorf("the isolated checker declared %s unhealthy: %+v", r.CheckID, r)
		}
	}
	if s := c.Self(); s.Healthy || s.Reason == "" {
		t.Errorf("Self() = %+v while isolated", s)
	}
	time.Sleep(200 * time.Millisecond)
	if got := c.Reports(); len(got) != 0 {
		t.Errorf("reports while isolated: %+v", got)
	}
	mid := len(rec.snapshot())

	dialer.down.Store(false)
	rec.waitFor(t, 5*time.Second, "recovery and fresh reports", func(rs []Report, ss []SelfHealth) bool {
		return len(ss) == 2 && ss[1].Healthy &&
			all(rs[mid:], names, func(r Report) bool { return r.Status == StatusHealthy && !r.Withdrawn })
	})
}

// startBehind starts a checker whose probes go through dialer, with a canary (edited by
// editCanary) and four checks (each edited by edit) on healthy servers, and waits until every
// check is reported healthy; it returns the checker, its recorder and the checks' ids.
func startBehind(t *testing.T, dialer *cuttableDialer, editCanary, edit func(*config.Check)) (*Checker, *recorder, []string) {
	t.Helper()
	rec := newRecorder()
	canaryAP, _ := switchable(t)
	canary := fastCheck("canary", canaryAP)
	editCanary(&canary)
	c, err := New(Options{
		Name:     "t",
		Logger:   quiet(),
		Prober:   ProberOptions{Dialer: dialer, Addresses: AddressPolicy{AllowLoopback: true}},
		Canaries: []config.Check{canary},
		OnReport: rec.onReport,
		OnSelf:   rec.onSelf,
	})
	if err != nil {
		t.Fatal(err)
	}
	names := ids(4, "c")
	var checks []config.Check
	for _, id := range names {
		ap, _ := switchable(t)
		c := fastCheck(id, ap)
		edit(&c)
		checks = append(checks, c)
	}
	if err := c.SetChecks(checks); err != nil {
		t.Fatal(err)
	}
	runChecker(t, c)
	rec.waitFor(t, 5*time.Second, "healthy reports", func(rs []Report, _ []SelfHealth) bool {
		return all(rs, names, func(r Report) bool { return r.Status == StatusHealthy })
	})
	return c, rec, names
}

// TestReturnIgnoresProbesOfTheOutage: behind a link that drops packets, probes started while
// the checker was isolated time out after it is back (its fast canary answers first). Those
// timeouts describe the checker's outage; counted, they would turn each check, whose state
// starts over on the return, unhealthy at once.
func TestReturnIgnoresProbesOfTheOutage(t *testing.T) {
	t.Parallel()
	dialer := &cuttableDialer{blackhole: true}
	_, rec, names := startBehind(t, dialer,
		func(c *config.Check) { c.Timeout = config.Duration(100 * time.Millisecond) },
		func(c *config.Check) { c.Timeout = config.Duration(time.Second) })
	dialer.down.Store(true)
	rec.waitFor(t, 10*time.Second, "isolation", func(_ []Report, ss []SelfHealth) bool {
		return len(ss) == 1 && !ss[0].Healthy
	})
	// Every check now has a probe hanging in its dial, started while isolated.
	time.Sleep(300 * time.Millisecond)
	mid := len(rec.snapshot())
	dialer.down.Store(false)
	rec.waitFor(t, 5*time.Second, "recovery and fresh reports", func(rs []Report, ss []SelfHealth) bool {
		return len(ss) == 2 && ss[1].Healthy &&
			all(rs[mid:], names, func(r Report) bool { return r.Status == StatusHealthy && !r.Withdrawn })
	})
	// The hanging probes time out within their 1s timeout of the return.
	time.Sleep(1500 * time.Millisecond)
	for _, r := range rec.snapshot()[mid:] {
		if r.Status == StatusUnhealthy {
			t.Errorf("after the return, %s was reported unhealthy: %+v", r.CheckID, r)
		}
	}
}
