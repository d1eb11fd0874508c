// Package control is Vigil's control plane: raft voters storing the configuration, the HTTP
// API to it, and the Watcher that nodes embed. A hashicorp/raft cluster of voters stores the
// configuration (checks, zones, record sets and the name-server shard of every zone) in a
// replicated state machine; the HTTP API reads, writes and watches it; data-plane nodes embed
// the Watcher to follow it and to keep a copy on local disk.
//
// The pieces, by file: state.go and commands.go hold the state and the pure functions that
// apply a typed command to it; fsm.go is the raft state machine around them; node.go runs one voter,
// with its raft log in a write-ahead log (hashicorp/raft-wal; store.go: a data directory of
// an older version keeps its BoltDB file, hashicorp/raft-boltdb); batch.go commits writes
// in groups; api*.go and
// forward.go are the HTTP API (any voter accepts a write and forwards it to the leader);
// watcher.go and cache.go are the data plane's client and its disk copy.
package control
