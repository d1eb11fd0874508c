// Package state is the control plane's configuration without raft: the State, the commands that
// change it, its deltas and changes, and the API's values.
//
// A State is immutable once published; a command applied to it (ApplyCommand) yields an Edit
// whose Next state shares every item the command did not touch. Package control runs the
// raft voters that agree on the commands, stores the log and serves the HTTP API; package
// control/client and the data plane's Watcher read the same values through this package, so
// that a reader of the control plane links neither raft nor its stores.
//
// The pieces, by file: state.go, edit.go and commands.go hold the state and the pure functions
// that apply a typed command to it; stateio.go its JSON form (GET /v1/state, snapshots, the
// data plane's copy on disk); delta.go and changes.go what changed between two indexes;
// ops*.go the alerts, overrides and audit log; dnssec.go and tsig.go the sealed keys; shard.go
// the name-server shards; views.go and values.go the bodies the API sends and receives.
package state
