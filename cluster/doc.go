// Package cluster starts a whole Vigil cluster in one process, over the simulated network of
// package regions. It runs control voters and agent runtimes (package node: checkers and
// locations), with a demo target and a canary per region. `vigil dev`, the experiments of
// package sim and the tests of package node run their clusters with it.
//
// A cluster stops when the context given to Start ends; Wait returns once everything has
// stopped. Its faults use the words of the scenario scripts (package sim) and of the
// real-process harness (package netlab): SetTargetDown, Cut, CutOneWay, SetLoss, SetLatency,
// Heal, SetOffline, Kill, Start, KillLeader, Restart. A region is its locations' link and its
// checkers' links: cutting a region cuts them all, for gossip and probes alike.
package cluster
