package gossip

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log"
	"log/slog"
	"math/rand/v2"
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
	seedRetryFirst = time.Second       // a node alone after its first join asks again this soon, then twice as long
	repairFanout   = 8                 // checkers asked directly for their rows per round
	maxDeltaQueue  = 8192              // deltas waiting to be relayed
	leaveTimeout   = 2 * time.Second   // graceful leave at shutdown
	// deadNodeReclaim is how long a dead node's name stays bound to its old address.
	deadNodeReclaim = time.Nanosecond
	forgetInterval  = time.Minute
)

// Pool is this process's place in the gossip pool: its membership (memberlist, with the
// pool's keys), its copy of the report table and the row it publishes. It is named for what
// it joins, so that the one Node of the tree is the agent's (node.Node); the control plane's
// voter is control.Server. Its methods are safe for concurrent use.
type Pool struct {
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
	halted  atomic.Bool // Shutdown was called: no more direct sends (near.go)
	work    chan job
	rtt     rttTable // round-trip times by member (rtt.go)
	// vsn are memberlist's protocol and delegate versions of this node: minimum, maximum and
	// current of each; refusals counts and logs the nodes refused (admission.go).
	vsn      [6]uint8
	refusals refusalLog

	mu      sync.Mutex // guards everything below; never held while calling into memberlist
	table   *Table
	own     *ownRow
	members map[string]Member
	// nearLocations are the locations of this node's region, besides itself, at most
	// maxNearLocations, that a checker sends its heartbeats to directly (near.go).
	nearLocations []*memberlist.Node
	known         map[string]knownPeer
	requested     map[string]time.Time
	unreached     map[string]time.Time // peers a repair send failed to reach, and when (reach.go)
	inflight      map[string]bool      // peers a repair send to is in flight
	v1peers       map[string]bool      // peers whose last bulk message was of wire version 1
	paged         map[string]time.Time // paged answers sent lately, by pagedKey, and when
	paging        bool                 // a row's pages are being sent (answer.go)
	rng           *rand.Rand
	joins         joinLog // failures to join while alone, for the logs (joinlog.go)
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

// New starts a node: memberlist is up and listening, alone until Join or Run joins seeds.
// Run runs the node's periodic work; without Run, call Shutdown.
func New(cfg Config) (*Pool, error) {
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
	n := &Pool{
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
	n.vsn = [6]uint8(mc.BuildVsnArray())
	mlog := newMemberlistLogger(log, cfg.Now, n.refuse)
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
		if inner, err = listen(&cfg, mlog); err != nil {
			return nil, err
		}
	}
	n.transport = newCountingTransport(inner, m, newGuard(&cfg, n.keyring, m, log))
	mc.Transport = n.transport
	mc.Delegate = (*delegate)(n)
	mc.Events = (*events)(n)
	mc.Ping = (*pinger)(n)
	mc.Alive = (*admission)(n)
	mc.Merge = (*admission)(n)
	ml, err := memberlist.Create(mc)
	if err != nil {
		_ = mc.Transport.Shutdown()
		return nil, fmt.Errorf("gossip: start memberlist: %w", err)
	}
	n.ml = ml
	n.addr = ml.LocalNode().Address()
	return n, nil
}

// listen returns memberlist's network transport on cfg's address. With port 0 the transport
// takes a free TCP port and then the same UDP port, which another process may hold: as
// memberlist's own default transport does, it tries again with another port when the bind
// fails ("bind: address already in use").
func listen(cfg *Config, mlog *log.Logger) (memberlist.Transport, error) {
	tries := 1
	if cfg.BindPort == 0 {
		tries = 10
	}
	var err error
	for range tries {
		var nt *memberlist.NetTransport
		nt, err = memberlist.NewNetTransport(&memberlist.NetTransportConfig{
			BindAddrs: []string{cfg.BindAddr}, BindPort: cfg.BindPort, Logger: mlog})
		if err == nil {
			return nt, nil
		}
	}
	return nil, fmt.Errorf("gossip: listen on %s:%d: %w", cfg.BindAddr, cfg.BindPort, err)
}

// numNodes is the pool size the broadcast queues scale retransmissions by.
func (n *Pool) numNodes() int { return int(max(n.alive.Load(), 1)) }

// ID returns the node's id.
func (n *Pool) ID() string { return n.cfg.ID }

// Addr returns the node's gossip address, host:port, for others to join.
func (n *Pool) Addr() string { return n.addr }

// Join joins the pool through the given addresses and returns how many it reached.
func (n *Pool) Join(addrs ...string) (int, error) {
	k, err := n.ml.Join(addrs)
	if err != nil {
		return k, fmt.Errorf("gossip: join: %w", err)
	}
	return k, nil
}

// Run joins the seeds, then heartbeats (as a checker), rejoins known peers, answers and asks
// for row repairs, and forgets old rows until ctx ends; then it leaves the pool and shuts
// down. Run may be called once.
func (n *Pool) Run(ctx context.Context) error {
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
		n.joinLoop(ctx)
	}()
	n.periodic(ctx, &wg)
	return nil
}

// joinLoop joins the seeds, then rejoins known peers every RejoinInterval and catches up
// after joins (its own and others') until ctx ends.
func (n *Pool) joinLoop(ctx context.Context) {
	var catchUp <-chan time.Time
	var last time.Time // of the latest catch-up
	rounds, wait := 0, catchUpFirst
	// Nodes started together (a region's processes at boot, a walkthrough's commands pasted at
	// once) dial seeds that do not listen yet. A node left alone by its first join asks again
	// after 1 s, then 2 s, 4 s, ... while it stays alone and the wait is shorter than
	// RejoinInterval, which takes over from there: a boot race costs seconds, not a whole
	// rejoin interval.
	var retry <-chan time.Time
	retryWait := seedRetryFirst
	if len(n.cfg.Seeds) > 0 {
		n.joinSeeds(ctx)
		rounds = catchUpRounds
		catchUp = time.After(wait)
		if n.alone() && retryWait < n.cfg.RejoinInterval {
			retry = time.After(retryWait)
		}
	}
	t := time.NewTicker(n.cfg.RejoinInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n.rejoin()
		case <-retry:
			n.rejoin()
			retry = nil
			if retryWait *= 2; n.alone() && retryWait < n.cfg.RejoinInterval {
				retry = time.After(retryWait)
			}
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
}

// alone reports whether the node knows no live member but itself.
func (n *Pool) alone() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.members) <= 1
}

// periodic heartbeats (as a checker), repairs rows and forgets old ones until ctx ends; then
// it leaves the pool and waits for the goroutines of wg before it returns.
func (n *Pool) periodic(ctx context.Context, wg *sync.WaitGroup) {
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
			return
		case <-beat:
			n.heartbeat()
		case <-n.beatChanged:
			beats.Reset(n.heartbeatInterval())
		case <-repair.C:
			n.repair()
			n.joinHeard(wg)
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
func (n *Pool) joinSeeds(ctx context.Context) {
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
	switch {
	case len(n.cfg.Seeds) > 0 && joined == 0:
		n.noteJoinFailure(n.cfg.Seeds, errors.Join(errs...))
	case joined > 0:
		n.noteJoined()
	}
}

// Shutdown stops memberlist without leaving: the pool will find this node dead. Run calls it
// when its context ends, after leaving.
func (n *Pool) Shutdown() {
	n.life.Lock()
	defer n.life.Unlock()
	if n.down {
		return
	}
	n.down = true
	n.halted.Store(true)
	if err := n.ml.Shutdown(); err != nil {
		n.log.Warn("shutdown failed", "err", err)
	}
}

// leave tells the pool this node is going, unless it is already down.
func (n *Pool) leave() {
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
func (n *Pool) heartbeat() {
	n.mu.Lock()
	h := n.own.heartbeat()
	n.table.applyHeartbeat(h, n.cfg.Now())
	msg := encodeHeartbeat(h)
	n.beats.QueueBroadcast(newBroadcast("h/"+h.checker, msg))
	near := n.nearLocations
	n.mu.Unlock()
	n.sendNear(near, msg)
}
