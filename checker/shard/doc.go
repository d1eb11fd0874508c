// Package shard owns Vigil's shuffle sharding: which checkers probe each check, which name
// servers serve each zone and where, and a poisoned shard's reach. The checkers of a check are
// chosen in each region, its name servers are virtual, and the reach of one poisoned shard is
// its blast radius.
//
// Checker assignment is rendezvous hashing (highest random weight) taken to the top k: every
// node computes it from the check id and its own view of the region's live checkers, with no
// ring and no per-member points, so the only memory per member is one 64-bit hash. When a
// checker leaves, only the checks it held move; when one joins, it takes its fair share and
// nothing else moves.
//
// Name-server sharding follows Route 53: a fleet of virtual name servers, a shard of a few of
// them per zone, either derived from the zone name alone (stateless, no guarantee) or allocated
// so that no two zones share more than a configured number of them (stateful). The stateful
// allocator keeps each (overlap+1)-subset of servers packed in one 64-bit word, and it can be
// rebuilt from stored allocations.
//
// Everything here is pure computation over its arguments: no I/O, no clock, no goroutines.
package shard
