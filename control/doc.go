// Package control is Vigil's control plane runtime: the raft voters that store the
// configuration and the HTTP API to it.
//
// The configuration itself (checks, zones, record sets and the name-server shard of every
// zone), the commands that change it and the values the API sends live in package
// control/state, which links no raft; this package replicates it. The pieces, by file:
// fsm.go is the raft state machine around control/state's pure functions; node.go runs one
// voter, with its raft log in a write-ahead log (hashicorp/raft-wal; store.go: a data
// directory of an older version keeps its BoltDB file, hashicorp/raft-boltdb); logcodec.go and
// logbinary.go encode commands in the log; batch.go commits writes in groups; api*.go and
// forward.go are the HTTP API (any voter accepts a write and forwards it to the leader). The
// data plane follows the configuration with control/client's Watcher.
package control
