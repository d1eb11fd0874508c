// Package quorum owns the verdict: how one DNS location decides, from the checker reports it
// holds, whether a check's endpoint is healthy. It is pure arithmetic in the spirit of
// etcd-io/raft's quorum package: no I/O, no goroutines, no clock of its own. Time is the `now`
// argument, and the previous verdict is passed back in by the caller, so every rule below can be
// tested from a table or a script.
//
// The rules, applied by Evaluate:
//
//   - A report is fresh while this location has heard its checker make progress within the
//     policy's freshness window (by the location's own clock: now − LastProgress ≤ window;
//     a zero LastProgress means never heard). A stale report counts neither for nor against.
//     A checker that withdraws a report (it left the check's shard, or it can reach nothing)
//     removes it from the table, so the location no longer holds it: it is not counted at all.
//   - Every other report counts, whoever sent it, even a checker the assignment does not
//     expect: views of membership differ during partitions. The expected checkers only serve
//     the evidence ("expected, never heard from").
//   - Healthy when healthy/fresh is strictly more than the healthy threshold (Route 53: more
//     than 18%) and there are at least MinReporters fresh reports; otherwise unhealthy.
//   - Fewer fresh reports than MinReporters: the previous verdict's state is held (fail static)
//     for at most the hold time, counted from the first evaluation that found the reports
//     short; once the hold has elapsed the verdict is unknown. Unknown is reported as unknown
//     but served as healthy (fail open): see Verdict.Serving.
//   - Disabled checks are always healthy. Inverted checks swap healthy and unhealthy; unknown
//     stays unknown.
//
// Combine decides calculated checks from their children's verdicts: healthy when at least
// MinHealthy children are serving healthy. An unknown child is served as healthy by DNS, so it
// counts as healthy here too, and the verdict counts and says how many of them were unknown.
//
// Evaluate returns a compact Verdict and allocates nothing, so a location can re-evaluate every
// check it serves many times a second. Explain computes the same verdict with the same code and
// adds its evidence: every checker's vote or why it did not count, and the expected checkers
// never heard from. Explanation is what the status API prints as JSON.
package quorum
