// Package dev is `vigil dev`: a whole multi-region Vigil network in one process, on
// loopback, for the demo and for tests.
//
// It runs a single-voter control plane (real raft, BoltDB files, the control API with the
// dev endpoints) and, following it, a cluster (package cluster): three regions of checkers
// and one DNS location per region, each a gossip node over the regions simulated network (so
// a cut region is cut for memberlist and for probes alike), and one demo target per region
// whose /healthz can be switched off. Faults (a target down, regions cut) are driven through
// dev-only endpoints of the control API, under /v1/dev/, and listed there.
//
// Every checker and location is a node.Node, the agent runtime `vigil agent` runs, with the
// regions network's transport and dialer injected and the control plane's API as its voter:
// the dev network runs the production wiring, not a copy of it. Each location serves the
// status API and page (package status) on its HTTP address.
package dev
