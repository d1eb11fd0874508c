// Package verdict keeps a location's verdicts up to date incrementally, re-deciding a check
// only when something it depends on changed. It holds, for every check, the reports that
// decide it and its current verdict. The rule itself stays in package quorum: the Engine calls
// quorum.Evaluate and quorum.Combine for each check it re-decides, and nothing else decides.
//
// Its input is the gossip table's change feed, as gossip hands it out (Apply takes one
// gossip.Changes): each report is a gossip.Entry, held as a compact vote, and each checker's
// progress a time. It hands quorum the votes of a check it re-decides as []quorum.Report, and
// hands out what changed as a Change (a check and its quorum.State).
//
// What re-decides a check:
//   - a report of the check set, changed or removed (SetReport, DeleteReport);
//   - a checker of the check going stale or fresh again. Freshness belongs to a checker's row,
//     not to one report: a checker's progress (Progress) refreshes all its reports at once and
//     costs O(1); its going stale or fresh again costs O(the checks it reports). A timer heap
//     holds one entry per checker, moved lazily when it falls due;
//   - a held verdict's hold running out (a timer heap of held checks, O(log n) each);
//   - a child of a calculated check changing state (parents are re-decided after all their
//     children, in the configuration's evaluation order);
//   - the check's configuration changing (Configure compares and re-decides only what differs).
//
// An Engine is pure data: it has no goroutine, no lock and no clock. Inputs mark what they
// touch; Advance(now) fires the timers due by now and re-decides what is marked, at now.
// Next says when the next timer falls due, and Changes hands out the checks whose verdicts
// changed, for the caller to install (DNS) and count (metrics). The caller (node) runs it from
// one goroutine woken by the gossip table's change feed and by Next.
//
// What the engine does not use: the checkers the assignment expects for a check never change
// a verdict's state, only its evidence (Counts.NeverHeard, Explanation.NeverHeard), so the
// engine decides without them and reads take them as an argument.
package verdict
