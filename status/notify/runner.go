package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// Store is the control plane as the Runner uses it; *control.Server is one.
type Store interface {
	// IsLeader reports whether this voter leads: only the leader decides and sends.
	IsLeader() bool
	// State returns the replicated state.
	State() *state.State
	// Apply commits a command (on the leader).
	Apply(cmd *state.Command) (uint64, error)
}

// Config configures a Runner. Zero fields take their defaults.
type Config struct {
	// Store is the voter the Runner runs beside. Required.
	Store Store
	// Source gives the locations' verdicts. Required.
	Source Source
	// Interval is how often the leader reads the verdicts and decides; default 1s.
	Interval time.Duration
	// Client sends notifications; default a client without proxy that follows no redirect.
	Client *http.Client
	// AttemptTimeout bounds one delivery attempt; default 5s.
	AttemptTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts, doubling from the one to the
	// other; defaults 500ms and 30s.
	MinBackoff, MaxBackoff time.Duration
	// GiveUpAfter is how long after an event was decided its delivery is given up; default
	// 1h.
	GiveUpAfter time.Duration
	// Refresh is how often firing alerts are posted again to Alertmanager receivers (which
	// end an alert not heard again); default 5m.
	Refresh time.Duration
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
}

// Runner decides and delivers notifications while its voter leads (see the package doc).
type Runner struct {
	cfg Config
	log *slog.Logger
	m   *metrics

	pending    map[string]time.Time // conditions held, not yet long enough (leader's memory)
	refreshed  time.Time            // last refresh of firing alerts to Alertmanager
	refreshing atomic.Bool          // a refresh is under way
	lead       context.CancelFunc   // ends the workers of this term; nil when not leading
	termCtx    context.Context      // the context of this term's workers
	wg         sync.WaitGroup

	mu      sync.Mutex               // guards workers
	workers map[string]chan struct{} // this term's worker of each receiver, by name
}

// New returns a Runner; Run runs it.
func New(cfg Config) (*Runner, error) {
	if cfg.Store == nil || cfg.Source == nil {
		return nil, errors.New("notify: a runner needs a store and a source")
	}
	cfg.Interval = cmpOr(cfg.Interval, time.Second)
	cfg.AttemptTimeout = cmpOr(cfg.AttemptTimeout, 5*time.Second)
	cfg.MinBackoff = cmpOr(cfg.MinBackoff, 500*time.Millisecond)
	cfg.MaxBackoff = cmpOr(cfg.MaxBackoff, 30*time.Second)
	cfg.GiveUpAfter = cmpOr(cfg.GiveUpAfter, time.Hour)
	cfg.Refresh = cmpOr(cfg.Refresh, 5*time.Minute)
	if cfg.Client == nil {
		cfg.Client = newClient()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Registerer, cfg.Store)
	if err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg, log: log, m: m, workers: map[string]chan struct{}{}}, nil
}

// Run decides and delivers until ctx ends; then it waits for its workers.
func (r *Runner) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	defer r.wg.Wait()
	defer r.stepDown()
	for {
		r.tick(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// tick is one round: decide and commit, then wake the delivery workers.
func (r *Runner) tick(ctx context.Context) {
	if !r.cfg.Store.IsLeader() {
		r.stepDown()
		return
	}
	if r.lead == nil {
		r.termCtx, r.lead = context.WithCancel(ctx)
	}
	s := r.cfg.Store.State()
	settings := s.Settings()
	n := settings.Notifications
	if n != nil && len(n.Rules) > 0 || len(s.Alerts()) > 0 {
		octx, cancel := context.WithTimeout(ctx, r.cfg.Interval*4)
		obs := r.cfg.Source.Observe(octx)
		cancel()
		now := time.Now()
		d := Decide(n, s.Alerts(), r.pending, obs, now)
		r.pending = d.Pending
		if !d.Empty() {
			if _, err := r.cfg.Store.Apply(&state.Command{Op: state.OpNotify, Notify: &d.Command}); err != nil {
				r.log.Warn("notify: recording a decision", "err", err)
			} else {
				r.m.decided(&d.Command)
				r.log.Info("notify: decided", "fire", len(d.Command.Fire), "repeat", len(d.Command.Repeat), "resolve", len(d.Command.Resolve))
			}
		}
		if now.Sub(r.refreshed) >= r.cfg.Refresh && r.refreshing.CompareAndSwap(false, true) {
			r.refreshed = now
			st, tctx := r.cfg.Store.State(), r.termCtx
			r.wg.Go(func() {
				defer r.refreshing.Store(false)
				r.refreshAlertmanager(tctx, n, st, now)
			})
		}
	}
	r.wakeWorkers(r.cfg.Store.State())
}

// stepDown ends the workers of the term and forgets the leader's memory.
func (r *Runner) stepDown() {
	if r.lead != nil {
		r.lead()
		r.lead = nil
	}
	r.pending = nil
	r.refreshed = time.Time{}
}

// wakeWorkers starts a worker for each receiver with notifications waiting (a worker leaves
// when its term ends or its voter stops leading) and wakes them.
func (r *Runner) wakeWorkers(s *state.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.workers == nil {
		r.workers = map[string]chan struct{}{}
	}
	out, _ := s.Outbox()
	for _, n := range out {
		for _, name := range n.Pending {
			if _, ok := r.workers[name]; ok {
				continue
			}
			wake := make(chan struct{}, 1)
			r.workers[name] = wake
			ctx := r.termCtx
			r.wg.Go(func() {
				r.work(ctx, name, wake)
				r.mu.Lock()
				if r.workers[name] == wake {
					delete(r.workers, name)
				}
				r.mu.Unlock()
			})
		}
	}
	for _, w := range r.workers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// work delivers the notifications waiting for one receiver, oldest first, until ctx ends.
func (r *Runner) work(ctx context.Context, name string, wake <-chan struct{}) {
	for ctx.Err() == nil {
		s := r.cfg.Store.State()
		n := nextFor(s, name)
		if n == nil {
			select {
			case <-ctx.Done():
			case <-wake:
			}
			continue
		}
		rc := receiverOf(s.Settings().Notifications, name)
		if rc == nil {
			r.log.Warn("notify: receiver no longer configured: event dropped for it", "receiver", name, "key", n.Key)
			r.m.outcome(name, "given_up")
		} else if !r.deliver(ctx, rc, n) {
			return
		}
		if _, err := r.cfg.Store.Apply(&state.Command{Op: state.OpNotify,
			Notify: &state.NotifyCommand{At: time.Now(), Delivered: []state.Delivery{{Key: n.Key, Receiver: name}}}}); err != nil {
			r.log.Warn("notify: recording a delivery", "receiver", name, "key", n.Key, "err", err)
			if !sleep(ctx, r.cfg.MinBackoff) {
				return
			}
		}
	}
}

// deliver sends n to rc until it is taken, refused for good or too old (true: done, either
// way), or ctx ends or this voter no longer leads (false).
func (r *Runner) deliver(ctx context.Context, rc *config.Receiver, n *state.Notification) bool {
	wait := r.cfg.MinBackoff
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil || !r.cfg.Store.IsLeader() {
			return false
		}
		actx, cancel := context.WithTimeout(ctx, r.cfg.AttemptTimeout)
		req, err := request(actx, rc, []*state.Notification{n}, time.Now())
		if err == nil {
			err = post(r.cfg.Client, req)
		}
		cancel()
		if err == nil {
			r.m.outcome(rc.Name, "delivered")
			r.log.Info("notify: delivered", "receiver", rc.Name, "key", n.Key, "attempt", attempt)
			return true
		}
		r.m.outcome(rc.Name, "failed")
		var perm permanentError
		if errors.As(err, &perm) || time.Since(n.At) > r.cfg.GiveUpAfter {
			r.m.outcome(rc.Name, "given_up")
			r.log.Error("notify: delivery given up", "receiver", rc.Name, "key", n.Key, "attempts", attempt, "err", err)
			return true
		}
		r.log.Warn("notify: delivery failed, retrying", "receiver", rc.Name, "key", n.Key, "attempt", attempt, "in", wait, "err", err)
		if !sleep(ctx, wait) {
			return false
		}
		wait = min(wait*2, r.cfg.MaxBackoff)
	}
}

// refreshAlertmanager posts every firing alert again to the Alertmanager receivers of its
// rule (not the events still waiting in the outbox for it: their own delivery comes).
func (r *Runner) refreshAlertmanager(ctx context.Context, n *config.Notifications, s *state.State, now time.Time) {
	if n == nil {
		return
	}
	out, _ := s.Outbox()
	waiting := map[string]bool{}
	for _, e := range out {
		for _, p := range e.Pending {
			waiting[p+"\x00"+e.Alert] = true
		}
	}
	by := map[string][]*state.Notification{}
	for _, a := range s.Alerts() {
		for _, name := range a.Receivers {
			rc := receiverOf(n, name)
			if rc == nil || rc.Kind != config.ReceiverAlertmanager || waiting[name+"\x00"+a.Key] {
				continue
			}
			by[name] = append(by[name], &state.Notification{Key: fmt.Sprintf("%s/%d/firing", a.Key, a.Episode), Kind: state.KindFiring,
				Rule: a.Rule, Check: a.Check, Location: a.Location, Since: a.Since, At: now,
				Summary: fmt.Sprintf("%s is unhealthy (rule %s), firing since %s", a.Check, a.Rule, a.Since.Format(time.RFC3339))})
		}
	}
	for name, ns := range by {
		actx, cancel := context.WithTimeout(ctx, r.cfg.AttemptTimeout)
		req, err := request(actx, receiverOf(n, name), ns, now)
		if err == nil {
			err = post(r.cfg.Client, req)
		}
		cancel()
		if err != nil {
			r.log.Warn("notify: refreshing firing alerts", "receiver", name, "alerts", len(ns), "err", err)
		}
	}
}

// nextFor returns the oldest notification waiting for receiver name, or nil.
func nextFor(s *state.State, name string) *state.Notification {
	out, _ := s.Outbox()
	for _, n := range out {
		if slices.Contains(n.Pending, name) {
			return n
		}
	}
	return nil
}

// receiverOf returns the receiver called name, or nil.
func receiverOf(n *config.Notifications, name string) *config.Receiver {
	if n == nil {
		return nil
	}
	for i := range n.Receivers {
		if n.Receivers[i].Name == name {
			return &n.Receivers[i]
		}
	}
	return nil
}

// sleep waits d or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
