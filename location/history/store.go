package history

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// The states a verdict change goes from and to.
const (
	// StateNone: no verdict (before the first one, or the check left the configuration).
	StateNone = ""
	// StateHealthy, StateUnhealthy and StateUnknown are quorum's states by name.
	StateHealthy   = "healthy"
	StateUnhealthy = "unhealthy"
	StateUnknown   = "unknown"
)

// Options configure a Store.
type Options struct {
	// Path is the log file; the previous one is Path + ".old". Empty keeps history in memory
	// only.
	Path string
	// MaxBytes bounds the two files together. Default 16 MiB; at least 64 KiB.
	MaxBytes int64
	// Changes is how many verdict changes a check keeps in memory. Default 16.
	Changes int
	// Answers is how many answer changes a record set keeps in memory. Default 8.
	Answers int
	// Mark is how often the log says the location is running, when nothing else is written.
	// Default 1 minute.
	Mark time.Duration
	// Logger logs a damaged log. Default discards.
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.MaxBytes == 0 {
		o.MaxBytes = 16 << 20
	}
	o.MaxBytes = max(o.MaxBytes, 64<<10)
	if o.Changes <= 0 {
		o.Changes = 16
	}
	if o.Answers <= 0 {
		o.Answers = 8
	}
	if o.Mark <= 0 {
		o.Mark = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Change is one verdict change at this location.
type Change struct {
	// Check is the check's id.
	Check string `json:"check"`
	// At is when the location decided it.
	At time.Time `json:"at"`
	// From and To are the states before and after (StateNone: no verdict).
	From string `json:"from"`
	To   string `json:"to"`
	// The counts that decided it: fresh reports healthy and unhealthy, and the reports not
	// counted because stale.
	Healthy   int `json:"healthy"`
	Unhealthy int `json:"unhealthy"`
	Fresh     int `json:"fresh"`
	Stale     int `json:"stale"`
}

// AnswerChange is one change of what a record set may answer at this location: the records
// it chooses among (the healthy eligible ones; all eligible ones under last resort).
type AnswerChange struct {
	// Name (absolute) and Type are the record set's.
	Name string `json:"name"`
	Type string `json:"type"`
	// At is when the location changed it.
	At time.Time `json:"at"`
	// From and To are the values answered from, before and after.
	From []string `json:"from"`
	To   []string `json:"to"`
	// LastResort says no record is healthy and all are answered.
	LastResort bool `json:"last_resort"`
}

// Availability is one check's healthy share over one window, at this location.
type Availability struct {
	// Window is "1h", "24h" or "7d".
	Window string `json:"window"`
	// Observed is how much of the window the location had a verdict for the check;
	// Healthy how much of that the verdict was healthy.
	Observed time.Duration `json:"observed_ns"`
	Healthy  time.Duration `json:"healthy_ns"`
	// Ratio is Healthy / Observed; 0 when nothing was observed.
	Ratio float64 `json:"ratio"`
}

// windowNames are the availability windows, in the order Availability lists them.
func windowNames() [3]string { return [3]string{"1h", "24h", "7d"} }

// CheckHistory is what a location remembers of one check.
type CheckHistory struct {
	// Check is the check's id; State its state now and Since when it took it.
	Check string    `json:"check"`
	State string    `json:"state"`
	Since time.Time `json:"since,omitzero"`
	// Changes are its latest verdict changes, newest first.
	Changes []Change `json:"changes"`
	// Availability is over 1 h, 24 h and 7 days.
	Availability []Availability `json:"availability"`
}

// answers is one record set in memory.
type answers struct {
	name, rtype string
	now         []string
	lastResort  bool
	changes     []AnswerChange
	head        int
}

// Store is a location's history. It is safe for concurrent use.
type Store struct {
	opts Options
	mu   sync.Mutex
	log  *file // nil: memory only
	// checks and sets are bounded by the configuration: a check that leaves it is forgotten
	// (Record with To StateNone), and a record set by Forget.
	checks checkTable
	sets   map[string]*answers
	gaps   []gap // when the location was not running, oldest first, at most maxGaps
	lastAt int64 // unix ms of the last record written or replayed
	marked int64 // unix ms of the last mark written
}

// gap is a time the location did not run, unix seconds.
type gap struct{ from, to int64 }

// maxGaps bounds the remembered downtimes (older ones only affect week-old buckets).
const maxGaps = 64

// stateCode packs a state's name into a byte (0: none).
func stateCode(s string) uint8 {
	switch s {
	case StateHealthy:
		return 1
	case StateUnhealthy:
		return 2
	case StateUnknown:
		return 3
	}
	return 0
}

// stateName is stateCode's inverse.
func stateName(c uint8) string {
	switch c {
	case 1:
		return StateHealthy
	case 2:
		return StateUnhealthy
	case 3:
		return StateUnknown
	}
	return StateNone
}

// Open returns the store of opts.Path, replaying its log, at now. A damaged record ends the
// replay of its file with a log line; only a file that cannot be opened or written fails.
func Open(opts Options, now time.Time) (*Store, error) {
	opts.setDefaults()
	s := &Store{opts: opts, sets: map[string]*answers{}}
	s.checks.init()
	if opts.Path == "" {
		return s, nil
	}
	f, err := openFile(opts.Path, opts.MaxBytes, opts.Logger, s.replay)
	if err != nil {
		return nil, err
	}
	s.log = f
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastAt != 0 {
		s.addGap(s.lastAt/1000, now.Unix())
	}
	if err := s.writeLocked([]record{{Kind: kindStart, At: now.UnixMilli()}}); err != nil {
		f.close()
		return nil, err
	}
	return s, nil
}

// Close closes the log.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return nil
	}
	err := s.log.close()
	s.log = nil
	return err
}

// addGap notes that the location did not run from from to to (unix seconds).
func (s *Store) addGap(from, to int64) {
	if to <= from {
		return
	}
	if n := len(s.gaps); n > 0 && s.gaps[n-1].to >= from {
		s.gaps[n-1].to = max(s.gaps[n-1].to, to)
		return
	}
	if len(s.gaps) == maxGaps {
		s.gaps = slices.Delete(s.gaps, 0, 1)
	}
	s.gaps = append(s.gaps, gap{from, to})
}

// apply changes memory for one verdict change.
func (s *Store) apply(ch Change) {
	c := s.checks.get(ch.Check)
	if c == nil {
		if ch.To == StateNone {
			return
		}
		c = s.checks.add(ch.Check)
	}
	at := ch.At.UnixMilli()
	if c.b == nil && len(c.events()) == s.opts.Changes && ch.To != StateNone {
		// The ring is full and its oldest change goes: from now on the buckets say what the
		// check's time was.
		c.b = s.replayed(c)
	}
	s.accrue(c, at/1000)
	if ch.To == StateNone {
		s.checks.remove(ch.Check)
		return
	}
	e := newEvent(at, stateCode(ch.From), stateCode(ch.To))
	e.healthy, e.unhealthy, e.fresh, e.stale = sat16(ch.Healthy), sat16(ch.Unhealthy), sat16(ch.Fresh), sat16(ch.Stale)
	c.addEvent(e, s.opts.Changes)
}

func sat16(n int) uint16 { return uint16(min(max(n, 0), 1<<16-1)) }

// applyAnswer changes memory for one answer change.
func (s *Store) applyAnswer(ch AnswerChange) {
	key := ch.Name + " " + ch.Type
	a := s.sets[key]
	if a == nil {
		a = &answers{name: ch.Name, rtype: ch.Type}
		s.sets[key] = a
	}
	a.now, a.lastResort = ch.To, ch.LastResort
	if len(a.changes) < s.opts.Answers {
		a.changes = append(a.changes, ch)
		return
	}
	a.changes[a.head] = ch
	a.head = (a.head + 1) % len(a.changes)
}

// State returns check's state as the store last recorded it (StateNone when it holds none),
// so that the caller can tell a change from a repetition after a restart.
func (s *Store) State(check string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.checks.get(check); c != nil {
		return stateName(c.state())
	}
	return StateNone
}

// Answering returns what record set name/type answered from when last recorded; ok is false
// when the store holds nothing of it.
func (s *Store) Answering(name, rtype string) (values []string, lastResort, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.sets[name+" "+rtype]
	if a == nil {
		return nil, false, false
	}
	return slices.Clone(a.now), a.lastResort, true
}

// Record keeps verdict and answer changes, in memory and (synced) in the log: once it returns
// without error, a crash loses none of them. A change whose From equals its To is skipped.
func (s *Store) Record(vs []Change, as []AnswerChange) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := make([]record, 0, len(vs)+len(as))
	for _, v := range vs {
		if v.From == v.To {
			continue
		}
		s.apply(v)
		recs = append(recs, recordOf(v))
	}
	for _, a := range as {
		s.applyAnswer(a)
		recs = append(recs, answerRecord(a))
	}
	if len(recs) == 0 {
		return nil
	}
	return s.writeLocked(recs)
}

// Forget drops what the store holds of a record set that left the configuration.
func (s *Store) Forget(name, rtype string) {
	s.mu.Lock()
	delete(s.sets, name+" "+rtype)
	s.mu.Unlock()
}

// Mark writes a mark that the location runs at now, if none was written within
// Options.Mark: the caller calls it about that often.
func (s *Store) Mark(now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := now.UnixMilli()
	if s.log == nil || at-max(s.marked, s.lastAt) < s.opts.Mark.Milliseconds() {
		return nil
	}
	return s.writeLocked([]record{{Kind: kindMark, At: at}})
}

// writeLocked appends recs to the log and syncs it.
func (s *Store) writeLocked(recs []record) error {
	last := recs[len(recs)-1].At
	s.lastAt = max(s.lastAt, last)
	if recs[len(recs)-1].Kind == kindMark || recs[len(recs)-1].Kind == kindStart {
		s.marked = last
	}
	if s.log == nil {
		return nil
	}
	if err := s.log.append(recs); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// replay applies one record read from the log at Open.
func (s *Store) replay(r record) {
	// A silence longer than two marks: the location did not run.
	limit := 2*s.opts.Mark.Milliseconds() + 5000
	if s.lastAt != 0 && (r.Kind == kindStart || r.At-s.lastAt > limit) {
		s.addGap(s.lastAt/1000, r.At/1000)
	}
	s.lastAt = max(s.lastAt, r.At)
	switch r.Kind {
	case kindVerdict:
		s.apply(r.change())
	case kindAnswer:
		s.applyAnswer(r.answer())
	}
}

// Check returns what the store holds of check id at now; ok is false when it holds nothing.
func (s *Store) Check(id string, now time.Time) (CheckHistory, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.checks.get(id)
	if c == nil {
		return CheckHistory{}, false
	}
	return s.historyLocked(id, c, now, true), true
}

func (s *Store) historyLocked(id string, c *check, now time.Time, changes bool) CheckHistory {
	h := CheckHistory{Check: id, State: stateName(c.state()), Since: time.UnixMilli(c.latest().at()), Changes: []Change{}}
	if changes {
		evs := c.events()
		n := len(evs)
		for i := range n {
			e := evs[(int(c.head)-1-i+2*n)%n]
			h.Changes = append(h.Changes, Change{Check: id, At: time.UnixMilli(e.at()), From: stateName(e.from()),
				To: stateName(e.to()), Healthy: int(e.healthy), Unhealthy: int(e.unhealthy), Fresh: int(e.fresh), Stale: int(e.stale)})
		}
	}
	sums := s.sums(c, now.Unix())
	for i, w := range windowNames() {
		a := Availability{Window: w, Observed: time.Duration(sums[i][0]) * time.Second, Healthy: time.Duration(sums[i][1]) * time.Second}
		if a.Observed > 0 {
			a.Ratio = float64(a.Healthy) / float64(a.Observed)
		}
		h.Availability = append(h.Availability, a)
	}
	return h
}

// Summaries returns every check's state and availability (no changes) at now, sorted by id,
// from the first id after after, at most limit (0: all); next is the last id returned when
// more follow.
func (s *Store) Summaries(after string, limit int, now time.Time) (out []CheckHistory, next string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, s.checks.len())
	for c := range s.checks.all {
		if c.id > after {
			ids = append(ids, c.id)
		}
	}
	slices.Sort(ids)
	if limit > 0 && len(ids) > limit {
		ids, next = ids[:limit], ids[limit-1]
	}
	for _, id := range ids {
		out = append(out, s.historyLocked(id, s.checks.get(id), now, false))
	}
	return out, next
}

// Answers returns the answer changes of every record set, or of those whose name is name
// (any case, with or without the final dot) when name is not empty, newest first.
func (s *Store) Answers(name string) []AnswerChange {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []AnswerChange
	for _, a := range s.sets {
		if name != "" && strings.TrimSuffix(a.name, ".") != name {
			continue
		}
		n := len(a.changes)
		for i := range n {
			out = append(out, a.changes[(a.head-1-i+2*n)%n])
		}
	}
	slices.SortStableFunc(out, func(a, b AnswerChange) int { return cmp.Or(b.At.Compare(a.At), cmp.Compare(a.Name, b.Name)) })
	return out
}
