// Package gossip is Vigil's data-plane pool: checkers and locations in one encrypted
// memberlist cluster. Each node is tagged with its id, roles, region and version; the keyring
// that encrypts the pool rotates without a restart.
//
// Over it, every checker owns one row of reports (its latest status per check) under a
// generation and a sequence number. Changes spread as small deltas, one per UDP packet, that
// every node relays on; heartbeats advance even when nothing changes, at least 5 per freshness
// window, each relayed by every node to 4 peers (liveness.go) and sent by the checker straight
// to its own region's locations as well (near.go); a periodic push/pull carries the
// header of the checker's own row and a digest of every row's header, never cells, and a node
// that finds itself behind asks for the rows it misses, saying what it holds, around cut
// links (reach.go); the answer carries only the changes since then when it can prove it has
// them all, else the whole row (sync.go), in pages when it is larger than one, applied only
// once every page is in (pages.go). A location merges rows by sequence and
// records, by its own clock, when each checker last made progress there: the freshness the
// quorum verdict needs. Progress is what a checker says while alive, relayed or not (its
// heartbeats, its deltas, the header of its own row in its push/pull); a third node's late
// copy of it is not (table.go's finish).
//
// A location reads its table in two ways: the change feed (Feed, Drain), the cells and rows
// changed since it last looked, with each report as the wire carries it (Entry), which the
// verdict engine takes whole; and ReportsFor, one check's reports in quorum's vocabulary
// (quorum.Report), for explanations and the checker's handoff.
//
// Membership (live checkers per region, join and leave events) is exposed for assignment, and
// a node rejoins the peers it knew, periodically, so that a partition heals by itself however
// long it lasted; a node left alone joins the peers that still talk to it. memberlist's verdict
// that a peer is dead is a hint for assignment and rejoining only: a checker's reports count
// while its progress arrives, whatever memberlist says of it.
package gossip
