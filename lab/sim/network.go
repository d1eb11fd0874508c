package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/lab/dev"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/regions"
)

// Networks a script runs on.
const (
	// NetworkDev is the dev network (package dev): whole regions can be cut.
	NetworkDev = "dev"
	// NetworkNodes is a network of agent runtimes (package node), each checker on a link of
	// its own: single checkers can be taken offline.
	NetworkNodes = "nodes"
)

// verdictView is what the sampler keeps of a verdict.
type verdictView struct {
	State     quorum.State
	Serving   bool
	Sentence  string
	Fresh     int
	Unhealthy int
	// UnhealthyFrom are the checkers whose unhealthy reports the location counted, when the
	// network can tell (the nodes network, read only while Unhealthy is not 0): a checker
	// whose probes time out on a starved machine is told apart from one that lost its network.
	UnhealthyFrom []string
	// Undecided says the location has decided nothing of the check since it (re)started: too
	// few fresh reports and no earlier verdict to hold.
	Undecided bool
}

// view keeps what the sampler needs of a location's verdict.
func view(v quorum.Explanation) verdictView {
	return verdictView{
		State: v.State, Serving: v.ServedAsHealthy, Sentence: v.Sentence,
		Fresh: v.Counts.Fresh, Unhealthy: v.Counts.Unhealthy,
		Undecided: v.Rule == quorum.RuleNone ||
			(v.Rule == quorum.RuleShort && v.At.Sub(v.HeldSince) < time.Duration(v.Hold)),
	}
}

// network is what a run drives: faults in, verdicts and DNS addresses out.
type network interface {
	SetTargetDown(region string, down bool) error
	Apply(f regions.Fault) error
	SetOffline(checker string, offline bool) error
	StopControl() error
	Restart() error
	Verdicts(location string) map[string]verdictView
	DNSAddr(location string) string
	// SetPoisoned makes the hostile endpoints of a poison network hang and flood, or answer
	// normally; other networks have none.
	SetPoisoned(on bool) error
	// addFigures adds to res what the network measured of itself (a poison network's probe
	// schedule); the others measure nothing.
	addFigures(res *Result)
	// writerAPIs returns the API URLs of the control voters a chaos writer writes through
	// (see startWriter), running or not; none on a network whose writes are not checked.
	writerAPIs() []string
}

// networkKind is a network a script can run on.
type networkKind struct {
	// document, when set, adds to the run's document what the network serves beyond it (the
	// poison networks' checks); targets learns the region of every check it adds.
	document func(doc *config.Document, targets map[string]string, regions []string) (*config.Document, error)
	// start starts the network on the dev network's layout cfg, serving doc; wait waits until
	// it has stopped after ctx ends.
	start func(ctx context.Context, o Options, cfg dev.Config, doc *config.Document) (n network, wait func() error, err error)
}

// networkKinds returns the networks a script can name, by name.
func networkKinds() map[string]networkKind {
	return map[string]networkKind{
		NetworkDev:             {start: startDev},
		NetworkNodes:           {start: startNodesNetwork},
		NetworkPoison:          poisonKind(NetworkPoison),
		NetworkPoisonUnsharded: poisonKind(NetworkPoisonUnsharded),
	}
}

// startDev starts the dev network on loopback ports of its own.
func startDev(ctx context.Context, o Options, cfg dev.Config, doc *config.Document) (network, func() error, error) {
	cfg.Document, cfg.DataDir, cfg.Logger = doc, o.DataDir, o.Logger
	cfg.ControlAddr = "127.0.0.1:0"
	for _, r := range cfg.Regions {
		cfg.Locations[r] = dev.Location{DNS: "127.0.0.1:0", HTTP: "127.0.0.1:0"}
	}
	n, err := dev.Start(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("sim: %w", err)
	}
	return devNetwork{n}, n.Wait, nil
}

// startNodesNetwork starts the nodes network with the checkers per region and the voters the
// script asks for.
func startNodesNetwork(ctx context.Context, o Options, cfg dev.Config, doc *config.Document) (network, func() error, error) {
	n, err := startNodes(ctx, cfg, doc, o.DataDir, o.Logger, o.Script.voters(), nodesOptions{checkers: o.Script.CheckersPerRegion})
	if err != nil {
		return nil, nil, err
	}
	return n, n.wait, nil
}

// notPoison is the error of a poison or cure step on a network without hostile endpoints.
func notPoison(on bool) error {
	kind := StepCure
	if on {
		kind = StepPoison
	}
	return fmt.Errorf("%s needs a poison network (network %s)", kind, NetworkPoison)
}

// devNetwork adapts a dev network.
type devNetwork struct{ *dev.Network }

// SetOffline is not possible on the dev network: its links are between whole regions.
func (devNetwork) SetOffline(string, bool) error {
	return errors.New("the dev network cannot take a single checker offline: run this script on the nodes network")
}

// StopControl is not offered on the dev network, whose locations need their voter to start.
func (devNetwork) StopControl() error {
	return errors.New("the dev network cannot lose its control plane: run this script on the nodes network")
}

// Restart is not offered on the dev network.
func (devNetwork) Restart() error {
	return errors.New("the dev network cannot restart its nodes: run this script on the nodes network")
}

// SetPoisoned is not possible on the dev network: it has no hostile endpoints.
func (devNetwork) SetPoisoned(on bool) error { return notPoison(on) }

// addFigures adds nothing: the dev network measures nothing of itself.
func (devNetwork) addFigures(*Result) {}

// SetPoisoned is not possible on the nodes network: only a poison network has hostile
// endpoints.
func (n *nodesNetwork) SetPoisoned(on bool) error { return notPoison(on) }

// addFigures adds nothing: the nodes network measures nothing of itself.
func (n *nodesNetwork) addFigures(*Result) {}

// writerAPIs returns none: the dev network's writes are not checked.
func (devNetwork) writerAPIs() []string { return nil }

// writerAPIs returns every control voter's API.
func (n *nodesNetwork) writerAPIs() []string { return n.ControlAPIs() }

// writerAPIs returns none: a poison network's writes are not checked (it would otherwise
// inherit the nodes network's voters).
func (p *poisonNetwork) writerAPIs() []string { return nil }

// Verdicts returns the location's verdicts.
func (d devNetwork) Verdicts(location string) map[string]verdictView {
	vs := d.Network.Verdicts(location)
	out := make(map[string]verdictView, len(vs))
	for id, v := range vs {
		out[id] = view(v)
	}
	return out
}
