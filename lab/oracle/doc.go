// Package oracle judges a recorded run of a Vigil network without asking Vigil anything: which
// DNS answers each location may give at each instant. From the configuration, the topology
// (regions, the region of each check's target, the region and roles of each process), the
// faults as they were applied, each with its wall-clock instant, and the targets' states
// alone, it computes for every location and instant which DNS answers are allowed, and judges
// every DNS query the run made. It never reads a verdict from a location, and it imports no
// package of the code under test (only config, for the document types); its routing rules are
// written from Route 53's documentation (policy.go).
//
// # What the model says
//
// Reach. A checker in region q reaches a target in region t while the target is up, the
// checker's process runs, and the link between q and t carries traffic both ways: a probe is
// TCP (or HTTP over TCP), so a one-way cut breaks it as a two-way cut does. A region always
// reaches itself. Loss on the link, or latency that a probe's round trips may not fit into
// before its timeout, makes the probe's result unsure: either.
//
// Hearing. A location in region r hears the checkers of region q while q's gossip can reach
// r: directly, or relayed through other regions, over the links in force (directed
// reachability; relays through a third region count, which is the non-transitive case: with
// us-east–sa-east cut and eu-west reaching both, us-east and sa-east still hear each other).
// A link carries gossip surely in one direction when it is cut in neither direction and loses
// at most Bounds.MaxLoss percent; it carries none in a direction that is cut; anything else
// (only the opposite direction cut, heavier loss, latency beyond the freshness margin) is
// unsure, and the oracle allows every set of heard regions between the sure and the possible.
//
// Reports. Each region of a check holds checkers_per_region assigned checkers, or fewer when
// fewer checker processes run there; which ones the assignment picks does not matter to the
// count. Their reports say healthy when they reach the target, unhealthy when they do not.
//
// Verdict (Route 53's rule as Vigil documents it in README.md and docs/architecture.md):
// among the fresh reports a location holds (those of the checkers it hears), healthy when
// more than healthy_threshold of them say healthy and at least min_reporters reported;
// inverted checks swap healthy and unhealthy, disabled ones are healthy. With too few fresh
// reports the last verdict is held for the document's hold, then it is unknown, which DNS
// serves as healthy (fail open). A calculated check is healthy when at least min_healthy of
// its children are served healthy. A record without a check is healthy; a record set answers
// by its policy, and all its records (last resort) when none is healthy.
//
// # Time
//
// Between two events the faults are constant, and the model gives each (location, check) a
// settled set of served values: one value when it is sure, both when it is not. An event
// changes some factors of a check at a location: whether a region's checkers reach the
// target, whether their gossip reaches the location, how many of them report. Each changed
// factor may still be seen at its old value for its own transition window, computed from the
// check's configuration and Bounds:
//
//   - a probe that starts failing (target down, link cut): interval × failure_threshold +
//     timeout;
//   - a probe that recovers: interval × success_threshold + timeout;
//   - reports that stop arriving: the freshness window;
//   - reports that start arriving again (a link heals): Bounds.GossipRepair;
//   - checkers stopping or starting: Bounds.Membership plus the freshness window and the
//     probes a new holder needs, the count of reports meanwhile anywhere between the fewest
//     and the most (the handoff makes before it breaks);
//
// each plus the propagation delay of the latency in force (across every region), the spread
// of a report through gossip (Bounds.Spread), the locations' evaluation tick (Bounds.Tick)
// and Bounds.Slack, and the total time the harness measured itself stalled (Run.Stalls: a
// network that runs in the harness's process stops with it). Meanwhile every mix of old and new values is allowed (some regions'
// reports already changed, others not yet), and wherever the mix leaves too few fresh reports
// the location may hold what it served before for the document's hold, then serve the check
// as unknown (healthy). A started location has no verdict: for Bounds.LocationStart +
// GossipRepair + the freshness window it may serve any check as healthy, or decide from
// whichever regions it hears first.
//
// # What is judged
//
//   - Wrong answer: an answer no allowed value of the record set's checks, at any instant of
//     the query's flight, selects by the record set's policy; an error rcode other than
//     SERVFAIL and REFUSED (which count as unanswered), or a name the document does not hold.
//   - Flip: a record's address leaving a location's answers and coming back (or the reverse)
//     while nothing about it changed: a change of its presence that no event's transition
//     window explains, or more changes within one window than that transition can make. Only
//     record sets whose answers show each record's health are watched (multivalue, failover).
//   - Unanswered: a query that timed out, failed, or got SERVFAIL or REFUSED while its location
//     was up (outside a kill and Bounds.LocationStart after its start); each location may leave
//     at most Bounds.Unanswered of its queries unanswered.
//   - Detection and recovery: for every event that changes a settled answer, the time from the
//     event to the first answer at each location that the new settled state allows and the old
//     one does not, measured from the answers themselves.
//
// A stall of the harness at least as long as a check's probe timeout fails that check's
// probes at every checker at once: until the check's recovery window after the stall, a
// wrong answer or a flip that the check's other value explains is excused (Report.Excused,
// counted in the report), not judged; one it does not explain still counts.
//
// Every finding carries the offending query, the queries around it at its location, what the
// model allowed and the events in force.
//
// # What it cannot decide
//
// The oracle says so rather than guess (Report.Unsure lists each case with its interval):
// results of probes across a lossy link, or one whose latency leaves a probe's round trips
// near its timeout; gossip over a link cut in one direction only or losing more than
// Bounds.MaxLoss; a location's answers within Bounds.LocationStart after it started. In those
// intervals every answer the possibilities allow is allowed, and presence changes are not
// counted as flips. Control-plane processes (voters) do not change what locations answer:
// their events only appear in the history. Configuration changes during the run are outside
// the model: the document is the one in force throughout.
package oracle
