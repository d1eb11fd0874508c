package sim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/vigil-dns/vigil/audit"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dev"
	"github.com/vigil-dns/vigil/node"
	"github.com/vigil-dns/vigil/quorum"
)

// Poison networks: the nodes network with six checkers per region, many ordinary checks and
// two hostile endpoints (one hangs every connection, one floods every response).
const (
	// NetworkPoison shards every check over 2 of the 6 checkers of each region.
	NetworkPoison = "poison"
	// NetworkPoisonUnsharded has every checker probe every check: sharding off.
	NetworkPoisonUnsharded = "poison-unsharded"
)

// The poison networks' layout.
const (
	poisonCheckers    = 6  // checkers per region
	poisonShard       = 2  // checkers_per_region of every check, sharded
	ordinaryPerRegion = 20 // ordinary HTTP checks per region
	// smallPool is the worker pool of the second half of each region's checkers (the first
	// half keep checker.DefaultConcurrency): the same run shows what the pool's size buys.
	smallPool = 1
	// hostileTarget is the fault model's name for where the hostile endpoints are: down
	// while they are poisoned, reached from every region.
	hostileTarget = "hostile"
	// maxProbeRecords bounds the probe results a poison network keeps.
	maxProbeRecords = 400_000
	// maxHostileConns bounds the connections a hostile endpoint holds at once; more are
	// closed at once.
	maxHostileConns = 512
	// maxHostileHold bounds how long a hostile endpoint holds or floods one connection.
	maxHostileHold = 30 * time.Second
)

// hostileCheck is a check of a hostile endpoint: its id, the endpoint's kind, its path and
// the body it looks for.
type hostileCheck struct{ id, kind, path, match string }

// hostileChecks returns the hostile checks: two hang on the hang endpoint, two are flooded by
// the flood endpoint (endless headers; an endless body where the check looks for a match).
func hostileChecks() []hostileCheck {
	return []hostileCheck{
		{"hang-1", hostileHang, "/hang/1", ""},
		{"hang-2", hostileHang, "/hang/2", ""},
		{"flood-headers", hostileFlood, "/headers", ""},
		{"flood-body", hostileFlood, "/body", "ok"},
	}
}

// poisonKind is the poison network of the given name: its document adds the ordinary and
// hostile checks, and it starts their targets with the nodes.
func poisonKind(name string) networkKind {
	return networkKind{
		document: func(doc *config.Document, targets map[string]string, regions []string) (*config.Document, error) {
			return poisonDocument(doc, targets, regions, name)
		},
		start: func(ctx context.Context, o Options, cfg dev.Config, doc *config.Document) (network, func() error, error) {
			n, err := startPoison(ctx, cfg, doc, o)
			if err != nil {
				return nil, nil, err
			}
			return n, n.wait, nil
		},
	}
}

// poisonCheck returns an ordinary-looking HTTP check of 1s interval and 500ms timeout, as the
// demo's are.
func poisonCheck(id string, port int, path string, k int) config.Check {
	c := config.DefaultCheck()
	c.ID, c.Protocol, c.Path = id, config.ProtocolHTTP, path
	c.Target = config.Target{Host: "127.0.0.1", Port: port}
	c.Interval, c.Timeout = config.Duration(time.Second), config.Duration(500*time.Millisecond)
	c.FailureThreshold, c.SuccessThreshold = 3, 2
	c.CheckersPerRegion = k
	return c
}

// poisonDocument adds to doc the poison network's checks: ordinaryPerRegion ordinary checks
// of one target per region, and the hostile checks; and a multivalue record set "pool" that
// serves some of each. targets learns the region of every new check (hostileTarget for the
// hostile ones). Every check of the unsharded network, the demo's included, is probed by
// every checker.
func poisonDocument(doc *config.Document, targets map[string]string, regions []string, network string) (*config.Document, error) {
	out := *doc
	out.Checks = slices.Clone(doc.Checks)
	k := poisonShard
	if network == NetworkPoisonUnsharded {
		k = poisonCheckers
		for i := range out.Checks {
			out.Checks[i].CheckersPerRegion = k
		}
	}
	var pool []config.Record
	for ri, r := range regions {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		for i := range ordinaryPerRegion {
			id := fmt.Sprintf("svc-%s-%02d", r, i+1)
			out.Checks = append(out.Checks, poisonCheck(id, port, "/svc/"+strconv.Itoa(i+1), k))
			targets[id] = r
			if i == 0 {
				pool = append(pool, config.Record{Value: fmt.Sprintf("192.0.2.%d", 10+ri), HealthCheck: id})
			}
		}
	}
	hang, err := freePort()
	if err != nil {
		return nil, err
	}
	flood, err := freePort()
	if err != nil {
		return nil, err
	}
	for i, h := range hostileChecks() {
		port := hang
		if h.kind == hostileFlood {
			port = flood
		}
		c := poisonCheck(h.id, port, h.path, k)
		c.BodyMatch = h.match
		out.Checks = append(out.Checks, c)
		targets[h.id] = hostileTarget
		pool = append(pool, config.Record{Value: fmt.Sprintf("198.51.100.%d", 20+i), HealthCheck: h.id})
	}
	if len(out.Zones) == 0 {
		return nil, errors.New("sim: poison: the document has no zone for the record set pool")
	}
	out.Zones = slices.Clone(doc.Zones)
	z := &out.Zones[0]
	z.RecordSets = append(slices.Clone(z.RecordSets), config.RecordSet{
		Name: "pool." + z.Name, Type: config.TypeA, Policy: config.PolicyMultivalue, Records: pool,
	})
	return &out, nil
}

// probeRecord is one probe result of a poison network's checker.
type probeRecord struct {
	checker, check string
	due, start     time.Time
	total          time.Duration
	healthy        bool
	reason         checker.Reason
}

// poisonNetwork is a nodes network with ordinary and hostile targets, which records every
// probe result of every checker.
type poisonNetwork struct {
	*nodesNetwork
	unsharded bool
	doc       *config.Document
	hostile   []*hostileServer
	pools     map[string]int     // worker pool by checker
	stopAll   context.CancelFunc // stops the targets
	wg        sync.WaitGroup     // the targets

	mu       sync.Mutex
	records  []probeRecord
	dropped  int
	poisonAt time.Time // the first poison step
	cureAt   time.Time // the last cure step
	poisoned bool
}

// startPoison starts the ordinary and hostile targets of doc (added by poisonDocument) and a
// nodes network of poisonCheckers checkers per region that probes them.
func startPoison(ctx context.Context, cfg dev.Config, doc *config.Document, o Options) (_ *poisonNetwork, err error) {
	sctx, stop := context.WithCancel(ctx)
	p := &poisonNetwork{unsharded: o.Script.Network == NetworkPoisonUnsharded, doc: doc, pools: map[string]int{},
		stopAll: stop}
	defer func() {
		if err != nil {
			if p.nodesNetwork != nil {
				_ = p.nodesNetwork.wait()
			}
			stop()
			p.wg.Wait()
		}
	}()
	ordinary := map[string]string{} // address -> region
	byAddr := map[string]*hostileServer{}
	hostile := hostileChecks()
	for _, c := range doc.Checks {
		addr := net.JoinHostPort(c.Target.Host, strconv.Itoa(c.Target.Port))
		if r, ok := strings.CutPrefix(c.ID, "svc-"); ok {
			ordinary[addr] = r[:strings.LastIndex(r, "-")]
			continue
		}
		i := slices.IndexFunc(hostile, func(h hostileCheck) bool { return h.id == c.ID })
		if i < 0 {
			continue
		}
		if byAddr[addr] != nil {
			continue
		}
		h, err := newHostile(addr, hostile[i].kind)
		if err != nil {
			return nil, err
		}
		byAddr[addr] = h
		p.hostile = append(p.hostile, h)
		p.wg.Go(func() { h.run(sctx) })
	}
	for _, addr := range sortedKeys(ordinary) {
		t, err := dev.NewTarget("svc-"+ordinary[addr], addr)
		if err != nil {
			return nil, fmt.Errorf("sim: poison: %w", err)
		}
		p.wg.Go(func() { _ = t.Run(sctx) })
	}
	tune := func(c *node.Config) {
		if c.Roles&node.RoleChecker == 0 {
			return
		}
		c.Probe.Concurrency = checker.DefaultConcurrency
		_, num, _ := strings.Cut(c.ID, "-checker-")
		if i, err := strconv.Atoi(num); err == nil && i > poisonCheckers/2 {
			c.Probe.Concurrency = smallPool
		}
		p.pools[c.ID] = c.Probe.Concurrency
		id := c.ID
		c.Probe.OnResult = func(check string, r checker.Result) { p.record(id, check, r) }
	}
	n, err := startNodes(sctx, cfg, doc, o.DataDir, o.Logger, o.Script.voters(), nodesOptions{checkers: poisonCheckers, tune: tune})
	if err != nil {
		return nil, err
	}
	p.nodesNetwork = n
	for addr, r := range ordinary {
		if err := n.sim.PlaceTarget(addr, r); err != nil {
			return nil, fmt.Errorf("sim: poison: %w", err)
		}
	}
	return p, nil
}

// wait stops the nodes and the targets and waits until they have.
func (p *poisonNetwork) wait() error {
	err := p.nodesNetwork.wait()
	p.stopAll()
	p.wg.Wait()
	return err
}

// record keeps one probe result (bounded by maxProbeRecords).
func (p *poisonNetwork) record(checkerID, check string, r checker.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.records) >= maxProbeRecords {
		p.dropped++
		return
	}
	p.records = append(p.records, probeRecord{checker: checkerID, check: check, due: r.Start.Add(-r.Lag), start: r.Start,
		total: r.Timings.Total, healthy: r.Healthy, reason: r.Reason})
}

// SetPoisoned makes the hostile endpoints hang and flood, or answer normally.
func (p *poisonNetwork) SetPoisoned(on bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if on && p.poisonAt.IsZero() {
		p.poisonAt = now
	}
	if !on && p.poisoned {
		p.cureAt = now
	}
	p.poisoned = on
	for _, h := range p.hostile {
		h.poisoned.Store(on)
	}
	return nil
}

// The kinds of hostile endpoint.
const (
	hostileHang  = "hang"  // accepts, reads the request, never answers
	hostileFlood = "flood" // answers with endless headers, or an endless body
)

// hostileServer is an HTTP endpoint that answers normally (200 "ok") until it is poisoned;
// then it hangs every connection, or floods every response as fast as the connection takes
// it: endless headers on /headers, an endless body on any other path.
type hostileServer struct {
	kind     string
	ln       net.Listener
	poisoned atomic.Bool
	conns    chan struct{} // a slot per connection held
	accepted atomic.Int64
	written  atomic.Int64 // bytes flooded
}

// newHostile listens on addr for a hostile endpoint of kind.
func newHostile(addr, kind string) (*hostileServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sim: hostile endpoint: %w", err)
	}
	return &hostileServer{kind: kind, ln: ln, conns: make(chan struct{}, maxHostileConns)}, nil
}

// run accepts connections until ctx ends, then closes every one it holds and returns.
func (h *hostileServer) run(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { h.ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := h.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			select { // e.g. out of file descriptors: try again shortly
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		h.accepted.Add(1)
		select {
		case h.conns <- struct{}{}:
		default:
			c.Close() // too many held: refuse this one
			continue
		}
		wg.Go(func() {
			defer func() { <-h.conns }()
			h.serve(ctx, c)
		})
	}
}

// serve answers one connection: normally, or by hanging or flooding while poisoned. Every
// connection ends when the client closes it, ctx ends, or after maxHostileHold.
func (h *hostileServer) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	_ = c.SetDeadline(time.Now().Add(maxHostileHold))
	br := bufio.NewReaderSize(c, 4096)
	line, err := br.ReadSlice('\n') // at most the buffer: a longer line is an error
	if err != nil {
		return
	}
	path := ""
	if f := strings.Fields(string(line)); len(f) >= 2 {
		path = f[1]
	}
	for range 100 { // the rest of the request head, bounded
		l, err := br.ReadSlice('\n')
		if err != nil || len(bytes.TrimSpace(l)) == 0 {
			break
		}
	}
	if !h.poisoned.Load() {
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"))
		return
	}
	switch {
	case h.kind == hostileHang:
		// Never answer: wait for the client to give up (its read ends in EOF).
		_, _ = br.Discard(1 << 20)
	case path == "/headers":
		h.flood(c, "HTTP/1.1 200 OK\r\n", "X-Flood: "+strings.Repeat("y", 1000)+"\r\n")
	default:
		h.flood(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n", strings.Repeat("x", 64<<10))
	}
}

// flood writes head, then chunk again and again until the connection fails (the client
// closed it) or its deadline passes.
func (h *hostileServer) flood(c net.Conn, head, chunk string) {
	if _, err := c.Write([]byte(head)); err != nil {
		return
	}
	b := []byte(chunk)
	for {
		n, err := c.Write(b)
		h.written.Add(int64(n))
		if err != nil {
			return
		}
	}
}

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
func (p *poisonNetwork) figures(readyAt time.Time, changes []audit.Change) *PoisonFigures {
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
	kinds := map[string]string{}
	for _, h := range hostileChecks() {
		kinds[h.id] = h.kind
	}
	in := func(r probeRecord, from, to time.Time) bool { return !r.due.Before(from) && r.due.Before(to) }
	// What each checker held while poisoned.
	held := map[string]map[string]bool{}
	for _, r := range recs {
		if kinds[r.check] != "" && in(r, poisonAt, cureAt) {
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
		case !readyAt.IsZero() && in(r, readyAt, poisonAt):
			base = append(base, r)
		case in(r, poisonAt, cureAt):
			g := group(r.checker)
			byGroup[g] = append(byGroup[g], r)
		}
	}
	f.Baseline = schedule(base, f.Interval)
	f.Baseline.Pool = -1
	f.Groups = scheduleBy(byGroup, f.Interval)
	byClass := map[[3]int][]probeRecord{}
	for k, recs := range byGroup {
		c := [3]int{k[0], min(k[1], 1), -1}
		byClass[c] = append(byClass[c], recs...)
	}
	f.Classes = scheduleBy(byClass, f.Interval)
	for _, h := range hostileChecks() {
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
		hf.Detected = len(first) == len(p.regions)
		for _, at := range first {
			hf.Detection = max(hf.Detection, at.Sub(poisonAt))
		}
		f.Hostile = append(f.Hostile, hf)
	}
	return f
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

// write adds the figures to a report.
func (f *PoisonFigures) write(b *strings.Builder) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	fmt.Fprintf(b, "\npoison network %s: %d checkers per region (pools: %d workers for checkers 1-%d, %d for %d-%d), every check on %d of them per region, probes every %v\n",
		f.Network, f.CheckersPerRegion, checker.DefaultConcurrency, f.CheckersPerRegion/2, smallPool, f.CheckersPerRegion/2+1, f.CheckersPerRegion, f.ShardSize, f.Interval)
	fmt.Fprintf(b, "  ordinary probes' schedule (lag: due to start; gap: between consecutive probes of one check at one checker; missed: gaps over 1.5 intervals)\n")
	tw := tabwriter.NewWriter(b, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  window\tpool\thostile checks held\tcheckers\tprobes\tfailed\tlag p50\tlag p99\tlag max\tgap max\tmissed")
	row := func(window, pool, held string, s ScheduleFigures) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%d of %d\n", window, pool, held, s.Checkers, s.Probes,
			s.Failed, ms(s.LagP50), ms(s.LagP99), ms(s.LagMax), ms(s.GapMax), s.Missed, s.Gaps)
	}
	row("before poison", "all", "-", f.Baseline)
	for _, s := range f.Groups {
		row(fmt.Sprintf("poisoned %.1fs", f.Poisoned.Seconds()), strconv.Itoa(s.Pool), fmt.Sprintf("%d hang, %d flood", s.Hangs, s.Floods), s)
	}
	for _, s := range f.Classes {
		held := "no hang"
		if s.Hangs > 0 {
			held = "a hang or two"
		}
		row("  (together)", strconv.Itoa(s.Pool), held, s)
	}
	tw.Flush()
	fmt.Fprintf(b, "  hostile checks while poisoned (the flood endpoint wrote %.1f MB; the hostile endpoints accepted %d connections)\n",
		float64(f.FloodBytes)/1e6, f.Accepted)
	tw = tabwriter.NewWriter(b, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  check\tkind\tcheckers\tprobes\treasons\tprobe p99\tlongest\ttimeout\tunhealthy everywhere after\tbound")
	for _, h := range f.Hostile {
		det := "never"
		if h.Detected {
			det = fmt.Sprintf("%.2fs", h.Detection.Seconds())
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%.2fs\n", h.Check, h.Kind, h.Checkers, h.Probes, h.Reasons,
			ms(h.P99), ms(h.Longest), ms(h.Timeout), det, h.Bound.Seconds())
	}
	tw.Flush()
	if f.Dropped > 0 {
		fmt.Fprintf(b, "  %d probe results not kept (bound %d reached)\n", f.Dropped, maxProbeRecords)
	}
}
