package sim

// The poison networks: a nodes network with ordinary and hostile targets that records every
// probe result of every checker.

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/lab/cluster"
	"github.com/vigil-dns/vigil/lab/dev"
)

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
		t, err := cluster.NewTarget("svc-"+ordinary[addr], addr)
		if err != nil {
			return nil, fmt.Errorf("sim: poison: %w", err)
		}
		p.wg.Go(func() { _ = t.Run(sctx) })
	}
	tune := func(c *agent.Config) {
		if c.Roles&agent.RoleChecker == 0 {
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
		if err := n.Place(addr, r); err != nil {
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
