// Package notify tells people when verdicts change: it decides when a rule's alert fires,
// repeats and resolves, and delivers each event to the rule's receivers. It decides from the
// verdicts the DNS locations hold; the receivers are generic JSON webhooks signed with
// HMAC-SHA256, Slack-compatible incoming webhooks, and the Alertmanager v2 alerts API.
//
// # One notification per event, network-wide
//
// Every control voter runs a Runner, and only the raft leader's acts; the others wait. The
// leader polls each location's verdict digest (GET /v1/network/digest on its status API),
// and Decide, a pure function of the rules, the alerts that fire, the digests and the time,
// says which alerts fire, repeat or resolve. The decision is committed to raft (control's
// OpNotify) before anything is sent, and applying it is the gate: an alert that fires does
// not fire again, a repeat is taken only in order, a resolve only once. Whoever asks (an old
// leader that does not know it lost, a new one that decides again), the replicated state
// holds one firing per episode. Each event gets its idempotency key from that state
// ("rule/check/<raft index of the firing>/firing"), so it is the same whichever voter sends.
//
// The events wait in an outbox in raft until each receiver has taken them: the leader's
// worker per receiver sends them in order, retrying with exponential backoff, and commits
// each delivery. A leader that dies mid-send leaves the event in the outbox, and the next
// leader sends it again with the same key: at least once on the wire, deduplicated by key by
// the receiver (Alertmanager does so by the alert's labels; a Slack channel cannot, and may
// show an event twice across a leader change). A node restart is the same story: the outbox
// and the alerts are in the raft log and its snapshots.
//
// What is not replicated: how long a condition has held before it fires (a rule's "for").
// A new leader starts that clock again, which delays a firing and never doubles it.
//
// A check under a maintenance override at a location (its digest lists the overrides)
// counts neither way there: maintenance alerts nobody.
//
// Cost: the leader reads every location's whole digest each Interval (about 100 bytes a
// check); for very large configurations a longer Interval bounds it.
//
// # Bounds
//
// At most state.MaxAlerts alerts fire and state.MaxOutbox events wait (the oldest is
// dropped and counted); an event a receiver has not taken within Config.GiveUpAfter, or
// that it refuses for good (a 4xx other than 408 and 429), is given up and logged. The
// digests are read with a timeout and a size limit, a few at a time.
package notify
