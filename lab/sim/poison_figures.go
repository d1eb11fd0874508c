package sim

// The poison figures: how the ordinary probes kept their schedule while the hostile endpoints
// hung and flooded, and how the hostile checks were probed and judged.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/lab/oracle/answeraudit"
	"github.com/vigil-dns/vigil/quorum"
)

// PoisonFigures are what a poison network measured: how the ordinary checks' probes kept
// their schedule while the hostile endpoints hung and flooded, by group of checkers, and how
// the hostile checks were probed and judged.
type PoisonFigures struct {
	// Network is the poison network's name; CheckersPerRegion and ShardSize its layout.
	Network                      string
	CheckersPerRegion, ShardSize int
	// Interval is every check's probe interval.
	Interval time.Duration
	// Poisoned is from the poison step to the cure step (or the end of the script).
	Poisoned time.Duration
	// Baseline is every checker's ordinary probes from ready to the poison step (its Pool
	// is -1: every pool).
	Baseline ScheduleFigures
	// BaselineByPool is the same probes by the checkers' worker pool (Hangs and Floods 0).
	BaselineByPool []ScheduleFigures
	// Groups are the ordinary probes while poisoned, by the checkers' worker pool and the
	// hostile checks they held.
	Groups []ScheduleFigures
	// Classes are the same probes by worker pool and by whether the checkers held a hang
	// check (Hangs 1) or not (Hangs 0); Floods is -1: not split.
	Classes []ScheduleFigures
	// Hostile are the hostile checks' probes (those that ran wholly while poisoned) and
	// verdicts.
	Hostile []HostileFigures
	// FloodBytes is what the flood endpoint wrote; Accepted the connections the hostile
	// endpoints accepted.
	FloodBytes, Accepted int64
	// Records counts the probe results kept; Dropped those not kept (bound reached).
	Records, Dropped int
}

// ScheduleFigures are the schedule of a group of checkers' ordinary probes.
type ScheduleFigures struct {
	// Pool is the checkers' worker pool; Hangs and Floods the hostile checks of each kind
	// they probed while poisoned.
	Pool, Hangs, Floods int
	// Checkers is the number of checkers in the group.
	Checkers int
	// Probes counts the group's ordinary probes in the window; Failed those that failed
	// (every ordinary target answers: a failure is the checker's own).
	Probes, Failed int
	// LagP50, LagP99 and LagMax are the probes' lags: from due to start.
	LagP50, LagP99, LagMax time.Duration
	// Gaps counts the intervals between consecutive probes of one check at one checker;
	// GapMax is the longest; Missed counts those over 1.5 probe intervals (a turn skipped).
	Gaps, Missed int
	GapMax       time.Duration
}

// HostileFigures are one hostile check's probes while poisoned and its verdicts.
type HostileFigures struct {
	// Check and Kind (hang or flood) name it.
	Check, Kind string
	// Checkers probed it Probes times; Reasons counts their reason codes, e.g. "timeout 40".
	Checkers, Probes int
	Reasons          string
	// P99 and Longest are the 99th percentile and the longest of its probes' durations;
	// Timeout is its timeout.
	P99, Longest, Timeout time.Duration
	// Detected is true when every location turned it unhealthy while poisoned; Detection is
	// from the poison step to the last of them, Bound the most it may take.
	Detected         bool
	Detection, Bound time.Duration
}

// addFigures adds to res the poison figures of the run.
func (p *poisonNetwork) addFigures(res *Result) {
	res.Poison = p.figures(res.ReadyAt, res.History.Changes)
}

// figures computes the poison figures from the probes recorded and the verdict changes.
func (p *poisonNetwork) figures(readyAt time.Time, changes []answeraudit.Change) *PoisonFigures {
	p.mu.Lock()
	recs := slices.Clone(p.records)
	f := &PoisonFigures{Network: NetworkPoison, CheckersPerRegion: poisonCheckers, ShardSize: poisonShard,
		Interval: time.Second, Records: len(p.records), Dropped: p.dropped}
	poisonAt, cureAt := p.poisonAt, p.cureAt
	p.mu.Unlock()
	if p.unsharded {
		f.Network, f.ShardSize = NetworkPoisonUnsharded, poisonCheckers
	}
	for _, h := range p.hostile {
		f.FloodBytes += h.written.Load()
		f.Accepted += h.accepted.Load()
	}
	if poisonAt.IsZero() {
		poisonAt = time.Now()
	}
	if cureAt.IsZero() || cureAt.Before(poisonAt) {
		cureAt = time.Now()
	}
	f.Poisoned = cureAt.Sub(poisonAt)
	p.scheduleFigures(f, recs, readyAt, poisonAt, cureAt)
	for _, h := range hostileChecks() {
		f.Hostile = append(f.Hostile, p.hostileFigures(h, recs, changes, poisonAt, cureAt))
	}
	return f
}

// dueIn reports whether r was due from from (included) to to (excluded).
func dueIn(r probeRecord, from, to time.Time) bool { return !r.due.Before(from) && r.due.Before(to) }

// scheduleFigures fills f's schedule figures of the ordinary probes: every checker's before
// the poison, and while poisoned by the checkers' worker pool and the hostile checks they held.
func (p *poisonNetwork) scheduleFigures(f *PoisonFigures, recs []probeRecord, readyAt, poisonAt, cureAt time.Time) {
	kinds := map[string]string{}
	for _, h := range hostileChecks() {
		kinds[h.id] = h.kind
	}
	// What each checker held while poisoned.
	held := map[string]map[string]bool{}
	for _, r := range recs {
		if kinds[r.check] != "" && dueIn(r, poisonAt, cureAt) {
			if held[r.checker] == nil {
				held[r.checker] = map[string]bool{}
			}
			held[r.checker][r.check] = true
		}
	}
	group := func(checkerID string) [3]int {
		var hangs, floods int
		for id := range held[checkerID] {
			if kinds[id] == hostileHang {
				hangs++
			} else {
				floods++
			}
		}
		return [3]int{p.pools[checkerID], hangs, floods}
	}
	var base []probeRecord
	byGroup := map[[3]int][]probeRecord{}
	for _, r := range recs {
		if kinds[r.check] != "" {
			continue
		}
		switch {
		case !readyAt.IsZero() && dueIn(r, readyAt, poisonAt):
			base = append(base, r)
		case dueIn(r, poisonAt, cureAt):
			g := group(r.checker)
			byGroup[g] = append(byGroup[g], r)
		}
	}
	f.Baseline = schedule(base, f.Interval)
	f.Baseline.Pool = -1
	byPool := map[[3]int][]probeRecord{}
	for _, r := range base {
		byPool[[3]int{p.pools[r.checker], 0, 0}] = append(byPool[[3]int{p.pools[r.checker], 0, 0}], r)
	}
	f.BaselineByPool = scheduleBy(byPool, f.Interval)
	f.Groups = scheduleBy(byGroup, f.Interval)
	byClass := map[[3]int][]probeRecord{}
	for k, recs := range byGroup {
		c := [3]int{k[0], min(k[1], 1), -1}
		byClass[c] = append(byClass[c], recs...)
	}
	f.Classes = scheduleBy(byClass, f.Interval)
}

// hostileFigures computes the figures of hostile check h: its probes that ran wholly while
// poisoned, and when each location turned it unhealthy.
func (p *poisonNetwork) hostileFigures(h hostileCheck, recs []probeRecord, changes []answeraudit.Change, poisonAt, cureAt time.Time) HostileFigures {
	c, _ := p.doc.CheckByID(h.id)
	hf := HostileFigures{Check: h.id, Kind: h.kind}
	if c != nil {
		hf.Timeout = c.Timeout.Std()
		// A probe is due within an interval of the poison; failure_threshold fail in a
		// row, the last ending by its timeout; then gossip (heartbeats every 500ms), the
		// locations' evaluation (100ms) and the sampling (50ms) take under a second.
		hf.Bound = time.Duration(c.FailureThreshold+1)*c.Interval.Std() + c.Timeout.Std() + time.Second
	}
	reasons := map[string]int{}
	checkers := map[string]bool{}
	var totals []time.Duration
	for _, r := range recs {
		// Only probes that ran wholly while the endpoint was hostile: a lagging probe due
		// before the cure may start after it.
		if r.check != h.id || r.start.Before(poisonAt) || r.start.Add(r.total).After(cureAt) {
			continue
		}
		hf.Probes++
		checkers[r.checker] = true
		reasons[string(r.reason)]++
		totals = append(totals, r.total)
	}
	if len(totals) > 0 {
		slices.Sort(totals)
		hf.P99, hf.Longest = totals[min(len(totals)-1, len(totals)*99/100)], totals[len(totals)-1]
	}
	hf.Checkers = len(checkers)
	var rs []string
	for _, k := range sortedKeys(reasons) {
		rs = append(rs, fmt.Sprintf("%s %d", k, reasons[k]))
	}
	hf.Reasons = strings.Join(rs, ", ")
	first := map[string]time.Time{}
	for _, ch := range changes {
		if ch.Check == h.id && ch.State == quorum.StateUnhealthy && !ch.At.Before(poisonAt) && !ch.At.After(cureAt) {
			if _, ok := first[ch.Location]; !ok {
				first[ch.Location] = ch.At
			}
		}
	}
	hf.Detected = len(first) == len(p.Regions())
	for _, at := range first {
		hf.Detection = max(hf.Detection, at.Sub(poisonAt))
	}
	return hf
}

// scheduleBy computes the schedule figures of each group, keyed by pool, hangs and floods,
// in key order.
func scheduleBy(groups map[[3]int][]probeRecord, interval time.Duration) []ScheduleFigures {
	keys := make([][3]int, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [3]int) int { return slices.Compare(a[:], b[:]) })
	out := make([]ScheduleFigures, 0, len(keys))
	for _, k := range keys {
		s := schedule(groups[k], interval)
		s.Pool, s.Hangs, s.Floods = k[0], k[1], k[2]
		out = append(out, s)
	}
	return out
}

// schedule computes the schedule figures of recs.
func schedule(recs []probeRecord, interval time.Duration) ScheduleFigures {
	var s ScheduleFigures
	checkers := map[string]bool{}
	lags := make([]time.Duration, 0, len(recs))
	last := map[[2]string]time.Time{}
	for _, r := range recs {
		checkers[r.checker] = true
		lags = append(lags, r.start.Sub(r.due))
		if !r.healthy {
			s.Failed++
		}
	}
	// Gaps between consecutive probes of a check at a checker, in start order.
	sorted := slices.Clone(recs)
	slices.SortFunc(sorted, func(a, b probeRecord) int { return a.start.Compare(b.start) })
	for _, r := range sorted {
		k := [2]string{r.checker, r.check}
		if prev, ok := last[k]; ok {
			g := r.start.Sub(prev)
			s.Gaps++
			s.GapMax = max(s.GapMax, g)
			if g > interval*3/2 {
				s.Missed++
			}
		}
		last[k] = r.start
	}
	s.Checkers, s.Probes = len(checkers), len(recs)
	if len(lags) > 0 {
		slices.Sort(lags)
		s.LagP50 = lags[len(lags)/2]
		s.LagP99 = lags[min(len(lags)-1, len(lags)*99/100)]
		s.LagMax = lags[len(lags)-1]
	}
	return s
}
