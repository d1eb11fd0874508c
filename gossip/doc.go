// Package gossip is Vigil's data-plane pool: checkers and locations in one memberlist cluster,
// each node tagged with its id, roles, region and version, encrypted by a keyring that rotates
// without a restart.
//
// Over it, every checker owns one row of reports (its latest status per check) under a
// generation and a sequence number. Changes spread as small deltas, one per UDP packet, that
// every node relays once; heartbeats advance even when nothing changes; a periodic push/pull
// carries the checker's own row and a digest of every row, and a node that finds itself behind
// asks for the rows it misses. A location merges rows by sequence and records, by its own
// clock, when each checker last made progress there: the freshness the quorum verdict needs.
//
// Membership (live checkers per region, join and leave events) is exposed for assignment, and
// a node rejoins the peers it knew, periodically, so that a partition heals by itself however
// long it lasted.
package gossip
