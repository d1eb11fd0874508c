package verdict

import (
	"math"
	"slices"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/internal/keyindex"
	"github.com/vigil-dns/vigil/internal/slots"
	"github.com/vigil-dns/vigil/quorum"
)

// Change is a check whose verdict changed since the last call of Changes: its state now, or
// that it left the configuration.
type Change struct {
	Check string
	// State is the verdict's state now.
	State quorum.State
	// Removed says the check left the configuration: it has no verdict any more.
	Removed bool
}

// Serving reports whether DNS serves the check as healthy: a verdict that is not unhealthy,
// or no verdict at all.
func (c Change) Serving() bool { return c.Removed || c.State != quorum.StateUnhealthy }

// Flags of a check.
const (
	flagConfigured uint8 = 1 << iota // the configuration holds the check
	flagEvaluated                    // the check has a verdict
	flagDirty                        // to re-decide at the next Advance
	flagQueued                       // in the queue of calculated checks to re-decide
	flagChanged                      // its verdict changed since the last Changes
	flagSeen                         // found in the configuration ConfigureAll is installing
	flagNoOrder                      // calculated, in a cycle: never decided
	flagListed                       // kept by the compaction of a checker's list under way
)

// vote is one checker's report on a check, from its gossip entry: 8 bytes (a check's six
// votes fit 48 bytes). A vote with checker.StatusUnknown (a checker that has not decided yet)
// is held but counts for nothing, as if absent.
type vote struct {
	ck      uint32 // the checker's index << 2 | the status
	latency uint32 // microseconds, saturating
}

func newVote(k int32, status checker.Status, latency uint32) vote {
	return vote{ck: uint32(k)<<2 | uint32(status&3), latency: latency}
}

// votedBy reports whether checker k holds a vote on c.
func (c *check) votedBy(k int32) bool {
	for _, v := range c.votes {
		if v.checker() == k {
			return true
		}
	}
	return false
}

// checker returns the index of the vote's checker.
func (v vote) checker() int32 { return int32(v.ck >> 2) }

// status returns the vote's status.
func (v vote) status() checker.Status { return checker.Status(v.ck & 3) }

// check is one check's state: its configuration, the reports on it and its verdict. 88 bytes:
// a million of them are most of the engine.
type check struct {
	id      string // the string the configuration or gossip handed in: shared, not copied
	votes   []vote
	since   int64
	held    int64 // HeldSince
	at      int64
	changes [3]uint32 // verdict changes to each state, for metrics
	policy  uint32    // a probed check's policy, in Engine.policies; calcPolicy: calculated
	holdPos int32     // place in Engine.holds, or -1
	flags   uint8
	state   quorum.State
	rule    quorum.Rule
}

// calcPolicy is the policy of a calculated check, whose configuration is in Engine.calcs.
const calcPolicy = math.MaxUint32

// isCalc reports whether c is a calculated check, configured.
func (c *check) isCalc() bool { return c.policy == calcPolicy }

// calc is a calculated check's configuration.
type calc struct {
	children   []int32
	ids        []string
	minHealthy int
	rank       int32 // the check's place in the evaluation order
	inverted   bool
	disabled   bool
}

func (c *calc) equal(o *calc) bool {
	if c.minHealthy != o.minHealthy || c.inverted != o.inverted || c.disabled != o.disabled || len(c.ids) != len(o.ids) {
		return false
	}
	for i := range c.ids {
		if c.ids[i] != o.ids[i] {
			return false
		}
	}
	return true
}

// checkerRow is one checker's row as the engine knows it.
type checkerRow struct {
	id, region string
	progress   int64
	// checks lists the checks it reports, in no order, and maybe checks it no longer reports
	// or twice the same (a vote dropped leaves its entry behind: a place in the list per vote
	// cost 4 bytes a report): readers skip a check without its vote. The list is compacted
	// once it holds over twice its reports.
	checks  []int32
	reports int32 // the reports it holds
	due     int64 // when its entry in Engine.fresh falls due, while queued
	gen     uint32
	fresh   bool
	queued  bool // holds an entry in Engine.fresh
	dirty   bool // its progress changed since the last Advance
}

// Engine holds a location's verdicts and re-decides only what changed. It is not safe for
// concurrent use; see the package documentation.
type Engine struct {
	clock    clock
	now      int64
	window   time.Duration
	checks   []check
	ids      *keyindex.Index // check id -> index in checks, by checks[i].id
	freeIDs  slots.Free[int32]
	checkers []checkerRow
	names    map[string]int32 // checker ids
	freeCKs  slots.Free[int32]
	policies policies
	parents  map[int32][]int32 // child -> calculated checks that combine it
	calcs    map[int32]*calc   // the calculated checks configured, with their configuration
	quorum   config.QuorumSettings
	fresh    timers // checkers, by the time they go stale
	holds    timers // held checks, by the time their hold runs out
	queue    timers // calculated checks to re-decide, by rank
	dirty    []int32
	dirtyCKs []int32
	changed  []int32
	removed  []string
	counts   [3]int
	// configured counts the checks the configuration holds.
	configured int
	scratch    []quorum.Report
	kids       []quorum.Verdict
	stats      Stats
}

// Stats count the engine's work since it was created.
type Stats struct {
	// Advances is the number of calls of Advance that re-decided anything.
	Advances uint64
	// Evaluations is the number of checks re-decided.
	Evaluations uint64
}

// New returns an empty engine: no checks, no checkers, the default freshness window.
func New() *Engine {
	e := &Engine{names: map[string]int32{}, parents: map[int32][]int32{},
		calcs: map[int32]*calc{}, policies: newPolicies(), window: quorum.FreshnessWindow(config.QuorumSettings{}), now: never}
	e.ids = keyindex.New(func(i int32) string { return e.checks[i].id })
	e.holds.pos = func(id int32) *int32 { return &e.checks[id].holdPos }
	return e
}

// checkIndex returns the index of check id, creating an unconfigured entry when create is set.
func (e *Engine) checkIndex(id string, create bool) (int32, bool) {
	if i, ok := e.ids.Get(id); ok {
		return i, true
	}
	if !create {
		return -1, false
	}
	i := e.freeIDs.Take()
	*slots.Place(&e.checks, i) = check{id: id, holdPos: -1, state: quorum.StateUnknown}
	e.ids.Put(id, i)
	return i, true
}

// release frees check i when nothing refers to it any more: not configured, no report, no
// calculated check combining it.
func (e *Engine) release(i int32) {
	c := &e.checks[i]
	if c.flags&flagConfigured != 0 || len(c.votes) > 0 || len(e.parents[i]) > 0 {
		return
	}
	e.holds.remove(i)
	e.ids.Delete(c.id)
	*c = check{holdPos: -1}
	e.freeIDs.Release(i)
}

// checkerIndex returns the index of checker id, creating it when create is set.
func (e *Engine) checkerIndex(id string, create bool) (int32, bool) {
	if k, ok := e.names[id]; ok {
		return k, true
	}
	if !create {
		return -1, false
	}
	k := e.freeCKs.Take()
	ck := slots.Place(&e.checkers, k) // a place taken again keeps its generation
	*ck = checkerRow{id: id, progress: never, gen: ck.gen + 1}
	e.names[id] = k
	return k, true
}

// markCheck marks check i to re-decide at the next Advance.
func (e *Engine) markCheck(i int32) {
	c := &e.checks[i]
	if c.flags&flagDirty == 0 {
		c.flags |= flagDirty
		e.dirty = append(e.dirty, i)
	}
}

// markChecker marks checker k's freshness to look at again at the next Advance.
func (e *Engine) markChecker(k int32) {
	if ck := &e.checkers[k]; !ck.dirty {
		ck.dirty = true
		e.dirtyCKs = append(e.dirtyCKs, k)
	}
}

// Apply takes one drain of the gossip table's change feed: each report set or deleted, then
// each row's progress, or its removal. It is SetReport, DeleteReport, Progress and
// RemoveChecker for every change, in that order.
func (e *Engine) Apply(ch *gossip.Changes) {
	for i := range ch.Cells {
		c := &ch.Cells[i]
		if c.Present {
			e.SetReport(c.Check, c.Checker, c.Entry)
		} else {
			e.DeleteReport(c.Check, c.Checker)
		}
	}
	for i := range ch.Rows {
		r := &ch.Rows[i]
		if r.Gone {
			e.RemoveChecker(r.Checker)
		} else {
			e.Progress(r.Checker, r.Region, r.Progress)
		}
	}
}

// SetReport sets checker's report on check: its gossip entry's status and latency (kept to
// the microsecond). A checker the engine does not know yet is created, never heard making
// progress (stale) until Progress says otherwise.
func (e *Engine) SetReport(checkID, checkerID string, r gossip.Entry) {
	i, _ := e.checkIndex(checkID, true)
	k, _ := e.checkerIndex(checkerID, true)
	status := r.Status
	if status != checker.StatusHealthy && status != checker.StatusUnhealthy {
		status = checker.StatusUnknown
	}
	v := newVote(k, status, micros(r.Latency))
	c := &e.checks[i]
	for j := range c.votes {
		if c.votes[j].checker() == k {
			if c.votes[j].status() != status {
				e.markCheck(i)
			}
			c.votes[j] = v
			return
		}
	}
	ck := &e.checkers[k]
	ck.checks = append(ck.checks, i)
	ck.reports++
	if len(c.votes) == cap(c.votes) {
		// A check has a handful of reports: grow by two, not by half, to hold no spare room.
		c.votes = append(make([]vote, 0, len(c.votes)+2), c.votes...)
	}
	c.votes = append(c.votes, v)
	if status != checker.StatusUnknown {
		e.markCheck(i)
	}
}

// DeleteReport removes checker's report on check, if the engine holds it.
func (e *Engine) DeleteReport(checkID, checkerID string) {
	i, ok := e.checkIndex(checkID, false)
	if !ok {
		return
	}
	k, ok := e.checkerIndex(checkerID, false)
	if !ok {
		return
	}
	c := &e.checks[i]
	for j := range c.votes {
		if c.votes[j].checker() == k {
			e.dropVote(i, j)
			e.release(i)
			return
		}
	}
}

// dropVote removes vote j of check i; its checker's list keeps the check until compacted.
func (e *Engine) dropVote(i int32, j int) {
	c := &e.checks[i]
	v := c.votes[j]
	if v.status() != checker.StatusUnknown {
		e.markCheck(i)
	}
	last := len(c.votes) - 1
	c.votes[j] = c.votes[last]
	c.votes = c.votes[:last]
	if len(c.votes) == 0 {
		c.votes = nil
	}
	ck := &e.checkers[v.checker()]
	ck.reports--
	if len(ck.checks) > 2*int(ck.reports)+64 {
		e.compact(v.checker())
	}
}

// compact drops from checker k's list the checks it holds no vote on, and repeats. It costs
// the list, once the list has grown past twice the reports: O(1) a vote dropped.
func (e *Engine) compact(k int32) {
	ck := &e.checkers[k]
	kept := ck.checks[:0]
	for _, i := range ck.checks {
		if c := &e.checks[i]; c.flags&flagListed == 0 && c.votedBy(k) {
			c.flags |= flagListed
			kept = append(kept, i)
		}
	}
	for _, i := range kept {
		e.checks[i].flags &^= flagListed
	}
	if cap(kept) > 4*len(kept)+64 {
		kept = slices.Clone(kept)
	}
	ck.checks = kept
}

// Progress records that this location last saw checker's row make progress at progress
// (zero: never), and the checker's region (empty: unknown). It costs O(1); the checker's
// reports are re-decided at the next Advance only if that makes it fresh or stale.
func (e *Engine) Progress(checkerID, region string, progress time.Time) {
	k, _ := e.checkerIndex(checkerID, true)
	ck := &e.checkers[k]
	if region != "" {
		ck.region = region
	}
	if p := e.clock.stamp(progress); p != ck.progress {
		ck.progress = p
		e.markChecker(k)
	}
}

// RemoveChecker forgets checker and every report of it (its row is gone).
func (e *Engine) RemoveChecker(checkerID string) {
	k, ok := e.checkerIndex(checkerID, false)
	if !ok {
		return
	}
	list := e.checkers[k].checks
	e.checkers[k].checks = nil // not compacted while dropped
	for _, i := range list {
		c := &e.checks[i]
		for j := range c.votes {
			if c.votes[j].checker() == k {
				e.dropVote(i, j)
				e.release(i)
				break
			}
		}
	}
	ck := &e.checkers[k]
	delete(e.names, ck.id)
	*ck = checkerRow{gen: ck.gen}
	e.freeCKs.Release(k)
}

// isFresh applies quorum's freshness rule to a progress stamp at now.
func (e *Engine) isFresh(progress, now int64) bool {
	return quorum.Policy{FreshnessWindow: e.window}.Fresh(e.clock.time(progress), e.clock.time(now))
}

// Changes appends to dst the checks whose verdicts changed since the last call (each once,
// as it stands now; checks that left the configuration first) and returns it.
func (e *Engine) Changes(dst []Change) []Change {
	for _, id := range e.removed {
		dst = append(dst, Change{Check: id, Removed: true})
	}
	clear(e.removed)
	e.removed = e.removed[:0]
	for _, i := range e.changed {
		c := &e.checks[i]
		if c.flags&flagChanged == 0 {
			continue
		}
		c.flags &^= flagChanged
		dst = append(dst, Change{Check: c.id, State: c.state})
	}
	e.changed = emptied(e.changed)
	return dst
}

// Stats returns the engine's work counters.
func (e *Engine) Stats() Stats { return e.stats }

func micros(d time.Duration) uint32 {
	us := max(d, 0) / time.Microsecond
	return uint32(min(us, 1<<32-1))
}
