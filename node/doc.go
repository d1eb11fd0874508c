// Package node is Vigil's agent runtime: it wires the roles a process runs (control, checker,
// location, in any combination) into one Node with one lifetime.
//
// Data flows one way through it. The configuration comes from the control plane through a
// Watcher (or from the Watcher's copy on local disk when no voter answers, so the data plane
// never needs the control plane to start). A checker assigns itself its shard of the checks
// from the live checkers that gossip shows it (shard.Plan), probes them (checker) and publishes
// its reports as its own gossip row. A location evaluates, on a steady tick, each check's
// quorum from the reports it holds, by its own clock (quorum.Evaluate, quorum.Combine in
// config.EvalOrder), and hands the verdicts to its DNS server (location). A control role runs
// a raft voter and its HTTP API.
//
// Every goroutine stops when Run's context ends. A node's HTTP listener serves /metrics,
// /healthz and /readyz, and handlers mounted with Handle (the status API, by MountStatus);
// the read-only methods of Node (Verdicts, ExplainCheck, Checkers, Answer, ...) return plain
// values for it.
package node
