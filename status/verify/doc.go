// Package verify owns answer verification: a checker compares every location's answers with
// what its published verdicts say, and measures failover time as Vigil saw it. It asks every
// location (and every virtual name server of the zone it hosts) for each record set that has
// health checks, compares the answer with what that location's own published verdicts (its
// status API digest) and the record set's routing policy say it should answer, and measures
// the time from a verdict change to every location answering accordingly.
//
// What a location should answer never comes from the checker's own probes: only from the
// location's digest, through routing.Possibilities. The pure parts (Expect, Judge, the
// convergence tracker) take time as an argument; Verifier is the loop that asks, bounded in
// queries per second, in time per query, and in what it remembers.
package verify
