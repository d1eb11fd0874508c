// Package cluster starts a whole Vigil cluster in one process, over the simulated network of
// package regions. It runs control voters and agent runtimes (package node: checkers and
// locations), with a demo target and a canary per region. `vigil dev`, the experiments of
// package sim and the tests of package node run their clusters with it.
//
// A cluster stops when the context given to Start ends; Wait returns once everything has
// stopped. Its link faults are those of package regions (Apply, with Cut and Heal as
// shorthands), as in the scenario scripts and netlab; its other faults: SetTargetDown,
// SetOffline, Kill, Start, KillLeader, Restart. A region is its locations' link and its
// checkers' links: cutting a region cuts them all, for gossip and probes alike.
package cluster
