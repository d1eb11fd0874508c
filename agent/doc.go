// Package node is Vigil's agent runtime: it wires the roles a process runs (control, checker,
// location, in any combination) into one Node with one lifetime.
//
// Data flows one way through it. The configuration comes from the control plane through a
// Watcher (or from the Watcher's copy on local disk when no voter answers, so the data plane
// never needs the control plane to start). A checker assigns itself its shard of the checks
// from the live checkers that gossip shows it (shard.Plan), probes them (checker) and publishes
// its reports as its own gossip row. A location keeps its verdicts up to date with a verdict
// engine (verdict.Engine) fed by the gossip table's change feed and its own clock, and hands
// the verdicts that change to its DNS server (location). A control role runs a raft voter and
// its HTTP API.
//
// One probe result to a DNS answer, hop by hop (→ marks the one conversion at each boundary):
//
//	checker   a probe returns a checker.Result; rise/fall makes it the slot's status, and the
//	          checker emits a checker.Report (Options.OnReport) when that status is first known,
//	          changes or is withdrawn
//	node      checker.Report → gossip.Entry (entryOf), published as this node's row
//	          (gossip.Pool.Publish, or Withdraw)
//	gossip    the entry is one cell of the checker's row: deltas (and anti-entropy, for what
//	          they miss) carry it to every node's table; a location's table marks it in its
//	          change feed
//	node      gossip.Pool.Drain hands the marked cells (gossip.CellChange, with the entry) and
//	          rows (gossip.RowChange, their progress) to verdict.Engine.Apply, untouched
//	verdict   gossip.Entry → a vote; Advance re-decides each marked check with quorum's rule:
//	          votes → []quorum.Report for quorum.Evaluate (quorum.Combine for calculated
//	          checks), which returns a quorum.Verdict; Changes hands out verdict.Change
//	node      verdict.Change → location.VerdictChange (served healthy or not, after the
//	          operator's overrides), installed by location.Server.PatchVerdicts
//	location  the verdict set answers routing.Health for a query's record set
//	routing   routing.Select (SelectNearest for nearest sets) picks the records by the set's
//	          policy, last resort included
//	location  the DNS answer
//
// The status API reads the same vocabulary: ExplainCheck takes the check's reports from gossip
// as quorum.Reports (gossip.Pool.ReportsFor) and the verdict with its evidence from the engine
// (verdict.Engine.Explain: a quorum.Explanation).
//
// Every goroutine stops when Run's context ends. A node's HTTP listener serves /metrics,
// /healthz and /readyz, and handlers mounted with Handle (the status API, by MountStatus);
// the read-only methods of Node (Verdicts, ExplainCheck, Checkers, Answer, ...) return plain
// values for it.
package agent
