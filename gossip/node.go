package gossip

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Bounds of the node's own queues and bookkeeping.
const (
	workQueue      = 256               // repair jobs waiting for the worker
	maxRowsPerAsk  = 256               // rows asked for, or sent, in one message
	askAgainAfter  = time.Second       // a row is asked for at most this often
	repairInterval = askAgainAfter / 2 // how often rows still missing are asked for again
	rejoinFanout   = 3                 // known peers rejoined per round
	catchUpRounds  = 3                 // push/pulls with random members after joining
	catchUpFirst   = time.Second       // the first of them, after the join; then twice as long
	catchUpSpacing = 5 * time.Second   // at least this between push/pulls after others' joins
	repairFanout   = 8                 // checkers asked directly for their rows per round
	maxDeltaQueue  = 8192              // deltas waiting to be relayed
	leaveTimeout   = 2 * time.Second   // graceful leave at shutdown
	// deadNodeReclaim is how long a dead node's name stays bound to its old address.
	deadNodeReclaim = time.Nanosecond
	forgetInterval  = time.Minute
)

// Node is one node of the pool. Its methods are safe for concurrent use.
type Node struct {
	cfg     Config
	log     *slog.Logger
	m       *metrics
	ml      *memberlist.Memberlist
	keyring *memberlist.Keyring
	kr      keyringState // keyring operations across the pool (keyring.go)
	addr    string
	deltas  *memberlist.TransmitLimitedQueue
	beats   *memberlist.TransmitLimitedQueue
	alive   atomic.Int64
	leaving atomic.Bool
	work    chan job
	rtt     rttTable // round-trip times by member (rtt.go)

	mu        sync.Mutex // guards everything below; never held while calling into memberlist
	table     *Table
	own       *ownRow
	members   map[string]Member
	known     map[string]knownPeer
	requested map[string]time.Time
	unreached map[string]time.Time // peers a repair send failed to reach, and when (reach.go)
	inflight  map[string]bool      // peers a repair send to is in flight
	v1peers   map[string]bool      // peers whose last bulk message was of wire version 1
	paged     map[string]time.Time // paged answers sent lately, by pagedKey, and when
	paging    bool                 // a row's pages are being sent (answer.go)
	rng       *rand.Rand
	// joined signals that a member joined (capacity 1: signals coalesce).
	joined chan struct{}

	runOnce sync.Once
	life    sync.Mutex // orders Leave and Shutdown: memberlist panics on Leave after Shutdown
	down    bool

	// beatEvery is the heartbeat interval in force, and beatChanged signals a change of it
	// (capacity 1; liveness.go).
	beatEvery   atomic.Int64
	beatChanged chan struct{}
	// window is the freshness window in force (SetFreshnessWindow), and lingering the
	// checkers memberlist declared dead whose progress still arrives (liveness.go; guarded by
	// mu).
	window    atomic.Int64
	lingering map[string]Member
	// transport is memberlist's transport, which remembers who talked to the node, and
	// joining is set while a lonely node joins them (reach.go).
	transport *countingTransport
	joining   atomic.Bool
}

// knownPeer is a peer remembered for rejoining.
type knownPeer struct {
	addr     string
	lastSeen time.Time
}

// job is work for the node's repair worker: ask a peer for rows, or answer a peer's ask.
type job struct {
	peer    string
	addr    string // the asker's address, for an answer
	asks    []ask
	answer  bool
	version byte // of the ask, for an answer
}

// New starts a node: memberlist is up and listening, alone until Join or Run joins seeds.
// Run runs the node's periodic work; without Run, call Shutdown.
func New(cfg Config) (*Node, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "gossip", "node", cfg.ID)
	h := fnv.New64a()
	h.Write([]byte(cfg.ID))
	n := &Node{
		cfg:       cfg,
		log:       log,
		m:         m,
		work:      make(chan job, workQueue),
		kr:        keyringState{pending: map[uint64]chan KeyringAnswer{}, replies: make(chan struct{}, keyringReplies)},
		table:     NewTable(cfg.MaxRows),
		members:   map[string]Member{},
		known:     map[string]knownPeer{},
		requested: map[string]time.Time{},
		unreached: map[string]time.Time{},
		inflight:  map[string]bool{},
		v1peers:   map[string]bool{},
		paged:     map[string]time.Time{},
		rng:       rand.New(rand.NewPCG(h.Sum64(), uint64(cfg.Now().UnixNano()))),
		joined:    make(chan struct{}, 1),

		beatChanged: make(chan struct{}, 1),
		lingering:   map[string]Member{},
	}
	if cfg.Roles.Has(RoleChecker) {
		// The generation orders restarts of this checker by its own clock only.
		n.own = newOwnRow(cfg.ID, uint64(max(cfg.Now().UnixNano(), 1)))
	}
	mc := cfg.memberlistConfig()
	mlog := newMemberlistLogger(log, cfg.Now)
	mc.Logger = mlog
	n.deltas = &memberlist.TransmitLimitedQueue{NumNodes: n.numNodes, RetransmitMult: mc.RetransmitMult}
	// Every node relays every heartbeat it learns to beatRelays peers, whatever the pool's
	// size (NumNodes 1 turns off memberlist's scaling by the pool's size).
	n.beats = &memberlist.TransmitLimitedQueue{NumNodes: func() int { return 1 }, RetransmitMult: beatRelays}
	if !cfg.Insecure {
		kr, err := memberlist.NewKeyring(cfg.Keys, cfg.Keys[0])
		if err != nil {
			return nil, fmt.Errorf("gossip: keyring: %w", err)
		}
		n.keyring = kr
		mc.Keyring = kr
	}
	inner := cfg.Transport
	if inner == nil {
		nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
			BindAddrs: []string{cfg.BindAddr}, BindPort: cfg.BindPort, Logger: mlog})
		if err != nil {
			return nil, fmt.Errorf("gossip: listen on %s:%d: %w", cfg.BindAddr, cfg.BindPort, err)
		}
		inner = nt
	}
	n.transport = newCountingTransport(inner, m, newGuard(&cfg, n.keyring, m, log))
	mc.Transport = n.transport
	mc.Delegate = (*delegate)(n)
	mc.Events = (*events)(n)
	mc.Ping = (*pinger)(n)
	ml, err := memberlist.Create(mc)
	if err != nil {
		_ = mc.Transport.Shutdown()
		return nil, fmt.Errorf("gossip: start memberlist: %w", err)
	}
	n.ml = ml
	n.addr = ml.LocalNode().Address()
	return n, nil
}

// numNodes is the pool size the broadcast queues scale retransmissions by.
func (n *Node) numNodes() int { return int(max(n.alive.Load(), 1)) }

// ID returns the node's id.
func (n *Node) ID() string { return n.cfg.ID }

// Addr returns the node's gossip address, host:port, for others to join.
func (n *Node) Addr() string { return n.addr }

// Join joins the pool through the given addresses and returns how many it reached.
func (n *Node) Join(addrs ...string) (int, error) {
	k, err := n.ml.Join(addrs)
	if err != nil {
		return k, fmt.Errorf("gossip: join: %w", err)
	}
	return k, nil
}

// Run joins the seeds, then heartbeats (as a checker), rejoins known peers, answers and asks
// for row repairs, and forgets old rows until ctx ends; then it leaves the pool and shuts
// down. Run may be called once.
func (n *Node) Run(ctx context.Context) error {
	ran := false
	n.runOnce.Do(func() { ran = true })
	if !ran {
		return errors.New("gossip: run called twice")
	}
	defer n.Shutdown()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		n.worker(ctx)
	}()
	go func() {
		// Joins block on dials into black holes: they get a goroutine of their own, so that
		// heartbeats never wait for them.
		defer wg.Done()
		var catchUp <-chan time.Time
		var last time.Time // of the latest catch-up
		rounds, wait := 0, catchUpFirst
		if len(n.cfg.Seeds) > 0 {
			n.joinSeeds(ctx)
			rounds = catchUpRounds
			catchUp = time.After(wait)
		}
		t := time.NewTicker(n.cfg.RejoinInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				n.rejoin()
			case <-n.joined:
				// A member joined. Its alive broadcast may have run out before it reached
				// this node's peers' peers (members joining at the same moment miss each
				// other's), and if every partner of every catch-up already knew it, nothing
				// broadcasts it again: one push/pull a moment later, at most one every
				// catchUpSpacing, makes every view whole within seconds instead of
				// memberlist's periodic push/pull (15s or more).
				if catchUp == nil {
					rounds, wait = 1, max(catchUpFirst, time.Until(last.Add(catchUpSpacing)))
					catchUp = time.After(wait)
				}
			case <-catchUp:
				n.catchUp()
				last = time.Now()
				if rounds--; rounds > 0 {
					wait *= 2
					catchUp = time.After(wait)
				} else {
					catchUp = nil
				}
			}
		}
	}()
	var beat <-chan time.Time
	beats := time.NewTicker(n.heartbeatInterval())
	defer beats.Stop()
	if n.own != nil {
		beat = beats.C
		n.heartbeat()
	}
	forget := time.NewTicker(min(n.cfg.RowTTL/4, forgetInterval))
	defer forget.Stop()
	repair := time.NewTicker(repairInterval)
	defer repair.Stop()
	for {
		select {
		case <-ctx.Done():
			n.leave()
			wg.Wait() // a rejoin in flight ends within memberlist's TCP timeout
			return nil
		case <-beat:
			n.heartbeat()
		case <-n.beatChanged:
			beats.Reset(n.heartbeatInterval())
		case <-repair.C:
			n.repair()
			n.joinHeard(&wg)
			n.sweepLingering()
		case <-forget.C:
			n.forget()
		}
	}
}

// joinSeeds joins the seeds one at a time, so that a stop waits for one dial at most (each
// into a black hole lasts memberlist's TCP timeout): joined all at once, a node whose seeds
// were unreachable took one timeout per seed to stop (found by `vigil sim chaos`: up to 14.6s
// for a node restarted while links were cut).
func (n *Node) joinSeeds(ctx context.Context) {
	joined := 0
	var errs []error
	for _, s := range n.cfg.Seeds {
		if ctx.Err() != nil {
			return
		}
		k, err := n.Join(s)
		joined += k
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(n.cfg.Seeds) > 0 && joined == 0 {
		n.log.Warn("join seeds failed; will retry", "err", errors.Join(errs...))
	}
}

// Shutdown stops memberlist without leaving: the pool will find this node dead. Run calls it
// when its context ends, after leaving.
func (n *Node) Shutdown() {
	n.life.Lock()
	defer n.life.Unlock()
	if n.down {
		return
	}
	n.down = true
	if err := n.ml.Shutdown(); err != nil {
		n.log.Warn("shutdown failed", "err", err)
	}
}

// leave tells the pool this node is going, unless it is already down.
func (n *Node) leave() {
	n.life.Lock()
	defer n.life.Unlock()
	if n.down {
		return
	}
	// Say so in the metadata first, so that peers stop rejoining this node.
	n.leaving.Store(true)
	if err := n.ml.UpdateNode(leaveTimeout); err != nil {
		n.log.Warn("announce leave failed", "err", err)
	}
	if err := n.ml.Leave(leaveTimeout); err != nil {
		n.log.Warn("leave failed", "err", err)
	}
}

// heartbeat advances this checker's beat and spreads it.
func (n *Node) heartbeat() {
	n.mu.Lock()
	defer n.mu.Unlock()
	h := n.own.heartbeat()
	n.table.applyHeartbeat(h, n.cfg.Now())
	n.beats.QueueBroadcast(newBroadcast("h/"+h.checker, encodeHeartbeat(h)))
}

// Publish sets this checker's report for check. An unchanged report sends nothing: the
// heartbeat already says the checker is making progress.
func (n *Node) Publish(check string, e Entry) error {
	if err := validID("check", check); err != nil {
		return err
	}
	if e.Status >= statusEnd {
		return fmt.Errorf("gossip: publish %s: unknown status %d", check, e.Status)
	}
	return n.change(func(o *ownRow) (delta, bool) { return o.set(check, e) })
}

// Withdraw removes this checker's report for check, e.g. when it left the check's shard.
func (n *Node) Withdraw(check string) error {
	if err := validID("check", check); err != nil {
		return err
	}
	return n.change(func(o *ownRow) (delta, bool) { return o.withdraw(check) })
}

// WithdrawAll removes every report of this checker, e.g. when it cannot reach anything.
func (n *Node) WithdrawAll() error {
	return n.change(func(o *ownRow) (delta, bool) { return o.withdrawAll() })
}

func (n *Node) change(f func(*ownRow) (delta, bool)) error {
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
func (n *Node) queueDelta(h header, check string, msg []byte) {
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
func (n *Node) gauges() {
	r, c := n.table.Len()
	n.m.reports.Set(float64(r))
	n.m.checkers.Set(float64(c))
}

// Reports returns every report this node holds, sorted by check then checker.
func (n *Node) Reports() []Report {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.regions(n.table.Reports())
}

// ReportsFor returns the reports of one check, sorted by checker.
func (n *Node) ReportsFor(check string) []Report {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.regions(n.table.ReportsFor(check))
}

// regions fills in the regions the table has not learnt. Called with n.mu held.
func (n *Node) regions(rs []Report) []Report {
	for i := range rs {
		if rs[i].Region == "" {
			rs[i].Region = n.members[rs[i].Checker].Region
		}
	}
	return rs
}

// repair asks again for the rows this node still lacks: rows behind the changes heard of, and
// the rows of live checkers never heard of at all. An ask that was lost, that its peer could not
// answer, or that found the row's checker not yet a member here is retried within
// askAgainAfter plus repairInterval, not left to a heartbeat that may or may not arrive next,
// nor to push/pull. Rows of checkers that are not members are never created here.
func (n *Node) repair() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.table.expirePages(n.cfg.Now())
	ids := n.table.lacking(maxRowsPerAsk)
	for id, m := range n.members {
		if len(ids) >= maxRowsPerAsk {
			break
		}
		if m.Roles.Has(RoleChecker) && !m.Leaving && id != n.cfg.ID && n.table.rows[id] == nil {
			ids = append(ids, id)
		}
	}
	// The checkers that are members are asked for their own rows, which they always hold
	// complete; the rest go in one ask to any live peer. So do the rows already asked for
	// that are still missing, and those of checkers a recent send failed to reach: behind a
	// cut link, a dial waits for memberlist's TCP timeout, and the row comes relayed (reach.go).
	var rest []string
	asked := 0
	now := n.cfg.Now()
	for _, id := range ids {
		_, ok := n.members[id]
		again := now.Sub(n.requested[id]) < 2*askAgainAfter
		if ok && asked < repairFanout && !again && !n.unreachedLocked(id, now) {
			n.want(id, []string{id})
			asked++
		} else {
			rest = append(rest, id)
		}
	}
	if len(rest) > 0 {
		n.want("", rest)
	}
}

// want asks peer for the rows of checkers that this node is behind on, at most once per
// askAgainAfter per row and never while a row's pages arrive, saying what it holds of each.
// Called with n.mu held.
func (n *Node) want(peer string, checkers []string) {
	now := n.cfg.Now()
	var asks []ask
	for _, c := range checkers {
		if c == n.cfg.ID || now.Sub(n.requested[c]) < askAgainAfter || len(asks) == maxRowsPerAsk ||
			n.table.assembling(c, now) {
			continue
		}
		n.requested[c] = now
		gen, seq, _ := n.table.holds(c)
		asks = append(asks, ask{checker: c, gen: gen, seq: seq})
	}
	if len(asks) > 0 {
		n.m.repairs.Add(float64(len(asks)))
		n.enqueue(job{peer: peer, asks: asks})
	}
}

func (n *Node) enqueue(j job) {
	select {
	case n.work <- j:
	default:
		k := kindRequest
		if j.answer {
			k = kindRows
		}
		n.m.drop(k, reasonQueueFull)
	}
}

// worker asks for and sends row repairs over memberlist's reliable stream until ctx ends,
// at most maxSends at a time (reach.go), so that a dial into a cut link does not hold up the
// rest.
func (n *Node) worker(ctx context.Context) {
	s := newSender(maxSends)
	defer s.wait()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-n.work:
			to := n.target(j)
			if to == nil {
				continue
			}
			var msgs iter.Seq[[]byte]
			done := func() {}
			if j.answer {
				if msgs, done = n.answer(j.peer, j.asks, j.version); msgs == nil {
					continue
				}
			} else {
				msgs = slices.Values([][]byte{encodeRequest(request{from: n.cfg.ID, addr: n.addr, asks: j.asks}, n.versionFor(to.Name))})
			}
			n.sending(to.Name, true)
			if !s.start(ctx, func() { defer done(); n.send(to, msgs, j) }) {
				n.sending(to.Name, false)
				done()
				return
			}
		}
	}
}

// versionFor returns the wire version to ask peer in: version 1 for a peer that spoke only
// version 1 lately (a node not yet upgraded refuses version 2), else version 2.
func (n *Node) versionFor(peer string) byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cfg.legacySync || n.v1peers[peer] {
		return wireV1
	}
	return wireV2
}

// spoke records the wire version of a bulk message from peer. Called with n.mu held.
func (n *Node) spoke(peer string, v byte) {
	switch {
	case v == wireV2:
		delete(n.v1peers, peer)
	case len(n.v1peers) < n.cfg.MaxKnownPeers:
		n.v1peers[peer] = true
	}
}

// target returns the node a job goes to: its peer when that is a live member here that a
// recent send did not fail to reach. Otherwise an answer goes to the address the asker gave
// (memberlist reports a new member alive to some nodes seconds after others, up to a
// push/pull later), and an ask goes to any other live member, preferring those reached
// (a row's checker is heard of through relays before it is a member here, and behind a cut
// link its row comes relayed), since every peer that holds the row complete can answer.
func (n *Node) target(j job) *memberlist.Node {
	members := n.ml.Members() // before n.mu: memberlist calls into the node with its locks held
	now := n.cfg.Now()
	var others, reached []*memberlist.Node
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range members {
		if m.State != memberlist.StateAlive || m.Name == n.cfg.ID {
			continue
		}
		cut := n.unreachedLocked(m.Name, now) || n.inflight[m.Name]
		if m.Name == j.peer && (j.answer || !cut) {
			return m
		}
		others = append(others, m)
		if !cut {
			reached = append(reached, m)
		}
	}
	if j.answer {
		return nodeAt(j.peer, j.addr)
	}
	if len(reached) > 0 {
		others = reached
	}
	if len(others) == 0 {
		return nil
	}
	return others[n.rng.IntN(len(others))]
}

// nodeAt returns a memberlist node for id at addr, an IP and port, or nil when addr is not one.
func nodeAt(id, addr string) *memberlist.Node {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	ip := net.ParseIP(host)
	p, err := strconv.ParseUint(port, 10, 16)
	if ip == nil || err != nil || p == 0 {
		return nil
	}
	return &memberlist.Node{Name: id, Addr: ip, Port: uint16(p)}
}

// rejoin joins a few known peers that are not alive, or the seeds when alone: memberlist
// alone does not heal a partition that outlasts its memory of the dead.
func (n *Node) rejoin() {
	n.mu.Lock()
	var addrs []string
	for id, k := range n.known {
		if _, alive := n.members[id]; !alive && id != n.cfg.ID {
			addrs = append(addrs, k.addr)
		}
	}
	if len(n.members) <= 1 {
		addrs = append(addrs, n.cfg.Seeds...)
	}
	sort.Strings(addrs)
	n.rng.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	n.mu.Unlock()
	if len(addrs) > rejoinFanout {
		addrs = addrs[:rejoinFanout]
	}
	if len(addrs) == 0 {
		return
	}
	n.m.rejoins.Add(float64(len(addrs)))
	if k, err := n.ml.Join(addrs); err != nil {
		n.log.Debug("rejoin", "reached", k, "tried", len(addrs), "err", err)
	}
}

// catchUp pushes and pulls the whole state with one random live member. A node that has just
// joined knows the pool as its seed knew it at that instant: the members that joined at the
// same moment through other seeds reach it only by broadcasts that may have run out before
// it was known, or by memberlist's own push/pull, every 15s or more (vigil sim fleet-growth
// saw new checkers miss each other for up to 20s). So a joiner catches up a few times.
func (n *Node) catchUp() {
	n.mu.Lock()
	var addrs []string
	for id, m := range n.members {
		if id != n.cfg.ID {
			addrs = append(addrs, m.Addr)
		}
	}
	sort.Strings(addrs)
	var addr string
	if len(addrs) > 0 {
		addr = addrs[n.rng.IntN(len(addrs))]
	}
	n.mu.Unlock()
	if addr == "" {
		return
	}
	if _, err := n.ml.Join([]string{addr}); err != nil {
		n.log.Debug("catch up", "peer", addr, "err", err)
	}
}

// forget drops rows that stopped changing RowTTL ago whose checkers are gone, peers not
// alive for ForgetPeersAfter, and old bookkeeping.
func (n *Node) forget() {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.cfg.Now()
	n.table.forget(now.Add(-n.cfg.RowTTL), func(id string) bool {
		_, ok := n.members[id]
		return ok || id == n.cfg.ID
	})
	for id, k := range n.known {
		if _, alive := n.members[id]; alive {
			k.lastSeen = now
			n.known[id] = k
		} else if now.Sub(k.lastSeen) > n.cfg.ForgetPeersAfter {
			delete(n.known, id)
		}
	}
	for c, t := range n.requested {
		if now.Sub(t) > askAgainAfter {
			delete(n.requested, c)
		}
	}
	for k, t := range n.paged {
		if now.Sub(t) >= pageIdle {
			delete(n.paged, k)
		}
	}
	for id := range n.v1peers {
		if _, ok := n.members[id]; !ok {
			delete(n.v1peers, id)
		}
	}
	for id, t := range n.unreached {
		if now.Sub(t) > unreachedFor {
			delete(n.unreached, id)
		}
	}
	if n.beats.NumQueued() > n.cfg.MaxRows {
		n.beats.Prune(n.cfg.MaxRows)
	}
	n.gauges()
}
