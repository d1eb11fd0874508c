package sim

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/lab/oracle"
)

// oracleRecorder keeps the faults of a run as the independent oracle (package oracle)
// reads them: each step that changes the network, at the instant it was in force.
type oracleRecorder struct {
	topo    oracle.Topology
	mu      sync.Mutex
	events  []oracle.Event
	stopped []string // nodes of the topology stopped by kill steps and not started since
}

// locationNode returns the oracle's name of a node of the nodes network: a location is
// named by its region (as the answers name it); others keep their names.
func locationNode(id string) string { return strings.TrimSuffix(id, "-location") }

// record adds the oracle's events of step st, in force at at.
func (o *oracleRecorder) record(st Step, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	add := func(e oracle.Event) {
		e.At = at
		o.events = append(o.events, e)
	}
	stop := func(n string) {
		if strings.HasPrefix(n, "voter-") {
			return // the control plane is not in the oracle's topology: it serves no answer
		}
		add(oracle.Event{Kind: oracle.EventKill, Node: n})
		o.stopped = append(o.stopped, n)
	}
	start := func(n string) {
		if i := slices.Index(o.stopped, n); i >= 0 {
			o.stopped = slices.Delete(o.stopped, i, i+1)
			add(oracle.Event{Kind: oracle.EventStart, Node: n})
		}
	}
	switch st.Kind {
	case StepDown, StepUp:
		kind := oracle.EventTargetDown
		if st.Kind == StepUp {
			kind = oracle.EventTargetUp
		}
		add(oracle.Event{Kind: kind, Target: st.Regions[0]})
	case StepPoison, StepCure:
		kind := oracle.EventTargetDown
		if st.Kind == StepCure {
			kind = oracle.EventTargetUp
		}
		add(oracle.Event{Kind: kind, Target: hostileTarget})
	case StepCut, StepHeal, StepCutOneWay, StepLoss, StepLatency:
		add(oracle.Event{Kind: oracle.EventLink, Link: st.Fault})
	case StepOffline:
		// A checker that loses its own network stops reporting as a stopped one does.
		stop(st.Regions[0])
	case StepOnline:
		start(st.Regions[0])
	case StepKill:
		stop(locationNode(st.Regions[0]))
	case StepStart:
		switch st.Regions[0] {
		case "all":
			for _, n := range slices.Clone(o.stopped) {
				start(n)
			}
		case "voters":
		default:
			start(locationNode(st.Regions[0]))
		}
	}
}

// restart records a restart step: every data-plane node of the topology stopped when it
// began and started when it ended (they restart one at a time in between).
func (o *oracleRecorder) restart(began, ended time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range o.topo.Nodes {
		o.events = append(o.events, oracle.Event{At: began, Kind: oracle.EventKill, Node: n.Name})
	}
	for _, n := range o.topo.Nodes {
		o.events = append(o.events, oracle.Event{At: ended, Kind: oracle.EventStart, Node: n.Name})
	}
}

// oracleTopology returns the topology of a run's network: per region a location named by
// the region, checkers named as the nodes network names them, and the region's target;
// targets maps each probed check to its target's region (the hostile endpoints of the
// poison network are placed in the first region, which no poison script cuts).
func oracleTopology(regions []string, checkers int, targets map[string]string) oracle.Topology {
	t := oracle.Topology{Regions: slices.Clone(regions), Checks: map[string]string{}}
	for _, r := range regions {
		t.Targets = append(t.Targets, oracle.Target{Name: r, Region: r})
		t.Nodes = append(t.Nodes, oracle.Node{Name: r, Region: r, Roles: []oracle.Role{oracle.RoleLocation}})
		for i := 1; i <= checkers; i++ {
			t.Nodes = append(t.Nodes, oracle.Node{Name: fmt.Sprintf("%s-checker-%d", r, i), Region: r, Roles: []oracle.Role{oracle.RoleChecker}})
		}
	}
	for id, target := range targets {
		if target == hostileTarget && !slices.ContainsFunc(t.Targets, func(x oracle.Target) bool { return x.Name == hostileTarget }) {
			t.Targets = append(t.Targets, oracle.Target{Name: hostileTarget, Region: regions[0]})
		}
		t.Checks[id] = target
	}
	return t
}

// checkersOf returns how many checkers each region of the script's network runs.
func checkersOf(sc Script, devCheckers int) int {
	switch sc.Network {
	case NetworkPoison, NetworkPoisonUnsharded:
		return poisonCheckers
	case NetworkNodes:
		if sc.CheckersPerRegion > 0 {
			return sc.CheckersPerRegion
		}
		return checkersPerRegion
	}
	return devCheckers
}

// oracleBounds returns what the oracle assumes of the in-process networks: their locations
// evaluate every 100ms (nodes) or 250ms (dev), gossip rejoins every 1-2s with a heartbeat
// every 0.5-1s, and memberlist's local profile detects a stopped node within seconds.
func oracleBounds() oracle.Bounds {
	b := oracle.DefaultBounds()
	b.Tick = 250 * time.Millisecond
	b.GossipRepair = 8 * time.Second
	b.Membership = 10 * time.Second
	return b
}

// newOracleRecorder returns the recorder of a run of sc on regions whose checks probe the
// targets of the regions targets maps them to; the dev network runs devCheckers per region.
func newOracleRecorder(sc Script, regions []string, devCheckers int, targets map[string]string) *oracleRecorder {
	return &oracleRecorder{topo: oracleTopology(regions, checkersOf(sc, devCheckers), targets)}
}

// judge judges a finished run with the oracle, from the document, the faults recorded and
// the answers alone.
func (o *oracleRecorder) judge(res *Result, doc *config.Document, start, end time.Time) {
	o.mu.Lock()
	events := slices.Clone(o.events)
	o.mu.Unlock()
	run := oracle.Run{Document: doc, Topology: o.topo, Start: start, End: end, Events: events}
	for _, st := range res.Stalls {
		if st.To.After(start) { // a stall before the run began delays nothing judged
			run.Stalls = append(run.Stalls, st)
		}
	}
	for _, a := range res.History.Answers {
		q := oracle.Query{Location: a.Location, Name: a.Name, Type: config.TypeA, Sent: a.Sent, Received: a.Received,
			Rcode: a.Rcode, Values: a.Values}
		if a.Err != "" {
			q.Err = a.Err
		}
		run.Queries = append(run.Queries, q)
	}
	rep, err := oracle.Judge(run, oracleBounds())
	if err != nil {
		res.OracleErr = err.Error()
		return
	}
	res.Oracle = &rep
}
