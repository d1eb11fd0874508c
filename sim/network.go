package sim

import (
	"errors"
	"time"

	"github.com/vigil-dns/vigil/dev"
	"github.com/vigil-dns/vigil/quorum"
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
	Cut(regions ...string) error
	Heal()
	SetOffline(checker string, offline bool) error
	StopControl() error
	Restart() error
	Verdicts(location string) map[string]verdictView
	DNSAddr(location string) string
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

// Verdicts returns the location's verdicts.
func (d devNetwork) Verdicts(location string) map[string]verdictView {
	vs := d.Network.Verdicts(location)
	out := make(map[string]verdictView, len(vs))
	for id, v := range vs {
		out[id] = view(v)
	}
	return out
}
