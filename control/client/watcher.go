package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/control/state"
)

// maxVoters bounds the voter URLs a Watcher keeps.
const maxVoters = 64

// WatcherConfig configures a Watcher.
type WatcherConfig struct {
	// Voters are base URLs of voters' APIs to start with; the Watcher also learns every
	// voter recorded in the state.
	Voters []string
	// Token is the bearer token for reads, if reads are not open.
	Token string
	// CachePath is the file of the local copy; empty keeps none.
	CachePath string
	// Client makes the requests; default a plain client (set its TLS config for https).
	Client *http.Client
	// Wait is the wait of each blocking read; default 30s.
	Wait time.Duration
	// RetryMin and RetryMax bound the back-off between failed attempts; default 100ms, 5s.
	RetryMin, RetryMax time.Duration
	// Logger receives the Watcher's logs; nil discards them.
	Logger *slog.Logger
	// Registerer receives the Watcher's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Watcher follows the control plane for a data-plane node: blocking reads of what changed
// (GET /v1/changes) from any reachable voter, applied to the configuration it holds; a copy
// on local disk, kept by appending each change to a journal; and that copy at start when no
// voter answers. Its index never goes backwards.
type Watcher struct {
	cfg  WatcherConfig
	log  *slog.Logger
	disk *diskCopy // nil without a copy on disk

	failures atomic.Uint64 // failed reads of voters, for the metrics

	mu      sync.Mutex
	state   *state.State
	source  state.Source
	status  state.WatcherStatus
	voters  []string
	changes *state.ChangeLog // what each change the Watcher took changed, for ChangesSince
	changed chan struct{}
	fails   map[string]*failLog // by voter: failures since its last answer, for the logs
}

// NewWatcher returns a Watcher that starts from the disk copy, if there is a readable one.
func NewWatcher(cfg WatcherConfig) (*Watcher, error) {
	if len(cfg.Voters) == 0 && cfg.CachePath == "" {
		return nil, errors.New("control: a watcher needs voters or a disk copy")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 30 * time.Second
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = 100 * time.Millisecond
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{cfg: cfg, log: log, source: state.SourceNone, changes: state.NewChangeLog(0), changed: make(chan struct{}), fails: map[string]*failLog{}}
	if cfg.Registerer != nil {
		if err := w.registerMetrics(cfg.Registerer); err != nil {
			return nil, err
		}
	}
	w.setVoters(nil)
	if cfg.CachePath != "" {
		disk, s, err := openCopy(cfg.CachePath)
		switch {
		case err != nil:
			log.Error("control: ignoring the configuration copy on disk", "err", err)
			w.status.LastError = err.Error()
			w.disk = &diskCopy{path: cfg.CachePath}
		case s != nil:
			w.state, w.source, w.disk = s, state.SourceDisk, disk
			w.changes.Reset(s.Index)
			w.setVoters(s.VoterURLs())
			log.Info("control: starting from the configuration copy on disk", "index", s.Index, "path", cfg.CachePath)
		default:
			w.disk = disk
		}
	}
	return w, nil
}

// Close releases the disk copy's journal. Run must have returned.
func (w *Watcher) Close() {
	if w.disk != nil {
		w.disk.close()
	}
}

// ChangesSince returns what changed from the configuration at index to the one in use (see
// Current): Full when the Watcher did not take that path change by change (it started from
// the disk copy after index, or a voter sent it the whole state).
func (w *Watcher) ChangesSince(index uint64) state.Changes {
	w.mu.Lock()
	s := w.state
	w.mu.Unlock()
	if s == nil {
		return state.Changes{Full: true}
	}
	return w.changes.Changes(index, s.Index)
}

// Current returns the configuration in use and its source; nil with state.SourceNone when the node
// has never seen one and must serve nothing.
func (w *Watcher) Current() (*state.State, state.Source) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state, w.source
}

// Changed returns a channel closed at the next change of the configuration or its source.
func (w *Watcher) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// Status reports the source and index of the configuration in use.
func (w *Watcher) Status() state.WatcherStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.status
	st.Source = w.source
	if w.state != nil {
		st.Index = w.state.Index
	}
	failing := ""
	if st.LastErrorVoter != "" {
		failing = fmt.Sprintf("the voter at %s failed: %s (%s)", st.LastErrorVoter, st.LastErrorCause, failureHint(st.LastErrorCause))
	}
	switch {
	case w.source == state.SourceNone && failing != "":
		st.Message = "no configuration yet, serving nothing: " + failing
	case w.source == state.SourceNone:
		st.Message = "no configuration yet: no voter has answered and there is no copy on disk; serving nothing"
	case w.source == state.SourceDisk && failing != "":
		st.Message = fmt.Sprintf("running from the copy on disk (index %d): %s", st.Index, failing)
	case w.source == state.SourceDisk:
		st.Message = fmt.Sprintf("running from the copy on disk (index %d): no voter has answered yet", st.Index)
	default:
		st.Message = fmt.Sprintf("running from the control plane (index %d)", st.Index)
	}
	return st
}

// setVoters sets the voter list: the configured ones, then learned ones, without repeats.
// Called with w.mu held or before the Watcher is shared.
func (w *Watcher) setVoters(learned []string) {
	var vs []string
	for _, v := range slices.Concat(w.cfg.Voters, learned) {
		v = strings.TrimRight(v, "/")
		if v != "" && !slices.Contains(vs, v) && len(vs) < maxVoters {
			vs = append(vs, v)
		}
	}
	w.voters = vs
}

// Run follows the control plane until ctx ends. It never returns an error of a voter: it
// retries, with back-off, from voter to voter.
func (w *Watcher) Run(ctx context.Context) error {
	backoff := w.cfg.RetryMin
	block := false // the first read answers at once, so that a node started from its copy learns that the control plane answers
	for i := 0; ; i++ {
		w.mu.Lock()
		voters := w.voters
		w.mu.Unlock()
		if len(voters) == 0 {
			<-ctx.Done()
			return ctx.Err()
		}
		voter := voters[i%len(voters)]
		err := w.poll(ctx, voter, block)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			w.noteSuccess(voter)
			block = true
			backoff = w.cfg.RetryMin
			i-- // stay with a voter that answers
			continue
		}
		w.failures.Add(1)
		w.noteFailure(voter, err)
		if (i+1)%len(voters) == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, w.cfg.RetryMax)
		}
	}
}

// poll makes one blocking read of what changed since the configuration in use, and takes the
// answer: a delta, or the whole state (client.Changes).
func (w *Watcher) poll(ctx context.Context, voter string, block bool) error {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Wait+10*time.Second)
	defer cancel()
	w.mu.Lock()
	var index uint64
	if w.state != nil {
		index = w.state.Index
	}
	w.mu.Unlock()
	wait := w.cfg.Wait
	if !block {
		wait = 0
	}
	c, err := New(Config{Voters: []string{voter}, Token: w.cfg.Token, HTTP: w.cfg.Client})
	if err != nil {
		return fmt.Errorf("control: watch %s: %w", voter, err)
	}
	s, delta, err := c.Changes(ctx, index, wait)
	if err != nil {
		return fmt.Errorf("control: watch %s: %w", voter, err)
	}
	if delta != nil {
		return w.takeDelta(voter, delta)
	}
	w.take(voter, s)
	return nil
}

// takeDelta applies a delta from voter to the configuration in use, unless it is not newer.
func (w *Watcher) takeDelta(voter string, d *state.Delta) error {
	w.mu.Lock()
	cur, src := w.state, w.source
	w.mu.Unlock()
	switch {
	case cur == nil:
		w.touch(voter)
		return nil
	case d.Index == cur.Index && src != state.SourceControlPlane:
		w.install(voter, cur) // the control plane has what the copy on disk has
		return nil
	case d.Index <= cur.Index:
		w.touch(voter)
		return nil
	}
	e, err := cur.ApplyDelta(d)
	if err != nil {
		return err
	}
	if w.disk != nil {
		if err := w.disk.add(d, e.Next); err != nil {
			w.log.Error("control: saving the configuration copy", "err", err)
		}
	}
	w.changes.Add(e.Next.Index, e.Keys())
	w.install(voter, e.Next)
	return nil
}

// take adopts s from voter unless it is older than the configuration in use.
func (w *Watcher) take(voter string, s *state.State) {
	w.mu.Lock()
	cur, src := w.state, w.source
	w.mu.Unlock()
	if cur != nil && s.Index < cur.Index {
		w.log.Debug("control: ignoring an older configuration", "voter", voter, "index", s.Index, "have", cur.Index)
		w.touch(voter)
		return
	}
	if s.Index == 0 {
		w.touch(voter) // the control plane has no configuration either
		return
	}
	if cur != nil && s.Index == cur.Index && src == state.SourceControlPlane {
		w.touch(voter)
		return
	}
	if w.disk != nil && (cur == nil || s.Index > cur.Index) {
		if err := w.disk.save(s); err != nil {
			w.log.Error("control: saving the configuration copy", "err", err)
		}
	}
	w.changes.Reset(s.Index)
	w.install(voter, s)
}

// install makes s the configuration in use and wakes those waiting for a change.
func (w *Watcher) install(voter string, s *state.State) {
	w.mu.Lock()
	w.state, w.source = s, state.SourceControlPlane
	w.setVoters(s.VoterURLs())
	w.clearFailureLocked(voter)
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
	w.log.Debug("control: new configuration", "index", s.Index, "voter", voter)
}

func (w *Watcher) touch(voter string) {
	w.mu.Lock()
	w.clearFailureLocked(voter)
	w.mu.Unlock()
}

// clearFailureLocked records that voter answered: the last failure is history. Called with
// w.mu held.
func (w *Watcher) clearFailureLocked(voter string) {
	w.status.Voter, w.status.LastContact = voter, time.Now()
	w.status.LastError, w.status.LastErrorVoter, w.status.LastErrorCause, w.status.LastErrorAt = "", "", "", time.Time{}
}

// registerMetrics registers the index and source of the configuration in use and the count
// of failed reads.
func (w *Watcher) registerMetrics(reg prometheus.Registerer) error {
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vigil_config_watch_index",
			Help: "The raft index of the configuration this node runs from; 0 when it has none.",
		}, func() float64 { return float64(w.Status().Index) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "vigil_config_watch_failures_total",
			Help: "Reads of a voter that failed (unreachable, refused or undecodable).",
		}, func() float64 { return float64(w.failures.Load()) }),
	}
	for _, src := range []state.Source{state.SourceNone, state.SourceDisk, state.SourceControlPlane} {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "vigil_config_watch_source",
			Help:        "1 for where the configuration in use came from: none, disk or control-plane.",
			ConstLabels: prometheus.Labels{"source": string(src)},
		}, func() float64 {
			if _, cur := w.Current(); cur == src {
				return 1
			}
			return 0
		}))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("control: register watcher metrics: %w", err)
		}
	}
	return nil
}
