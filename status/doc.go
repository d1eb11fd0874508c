// Package status owns what a Vigil node tells the people who run it: the status API, health
// probes, metrics, the status page and `vigil status`. The JSON status API under /v1/ serves a
// location's verdicts with their evidence, the checkers it hears and what it would answer; a
// checker's probes and self-health; every node's members, configuration and version. Beside it
// are the /healthz and /readyz probes, /metrics, the status page (embedded in the binary: on a
// location a matrix of checks by region, the network side by side and the DNS view of GET
// /v1/answers; on a checker its probes; on every node its answer verification when it runs one
// and its members, each section fetched on its own) and the client and tables behind
// `vigil status`.
//
// The package reads a node through three small interfaces, LocationView, CheckerView and
// NodeView, written in terms of the types that compute the data (quorum.Explanation,
// routing.Result, quorum.HeardChecker, checker.Report and checker.Result, state.WatcherStatus)
// and of its own Identity, Member and Readiness, which node.Node returns as they are.
// It computes nothing of its own beyond arranging that data: the verdict, its evidence and the
// answer come from the quorum and routing packages, so what the page shows is what DNS serves.
//
// Every response is JSON in the shapes of bodies.go, which the client decodes with the same types;
// every error is {"error": "..."} with a 4xx or 5xx status. Where the API shows a domain type as
// it is, it writes that type itself, with its JSON tags (quorum.Vote, quorum.ChildVote,
// quorum.Counts, quorum.State and Rule, quorum.HeardChecker, routing.Candidate,
// checker.SelfHealth, state.WatcherStatus, location.ZoneState, history's types); bodies.go holds
// only the views the API derives (a check's summary and evidence with its region cells, probes,
// answers, digests and the network view), each saying why. testdata/golden records every
// endpoint's JSON byte for byte.
//
// Wiring a node (what node.Node.MountStatus does): New(Options{Node, Location, Checker, Gatherer,
// Registerer}) and serve the API on the node's status address (default 127.0.0.1:7701).
//   - Location: Verdicts returns the verdicts the location last installed in its DNS server;
//     Explain runs quorum.Explain (quorum.ExplainCombined for calculated checks) over the reports
//     it holds for the check now, with the expected checkers and the previous verdict it passed
//     to Evaluate; Checkers is what its verdict engine knows of each checker (quorum.HeardFrom
//     computes the same from reports); Answer is location.Server.Explain with a random draw.
//   - Checker: Probes pairs each assigned check (what was given to checker.SetChecks) with its
//     report from checker.Checker.Reports and the latest result from checker.Options.OnResult;
//     Self is checker.Checker.Self.
//   - Node: Config is client.Watcher.Status; Members and Readiness come from the gossip pool
//     and the node's own warm-up.
package status
