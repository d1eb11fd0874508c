// Package routing owns answer selection: given a record set, the health of each check and a
// random draw, it returns the records a location answers. It follows the record set's routing
// policy (simple, weighted, multivalue, failover) with Route 53's semantics, including last
// resort: when no record is healthy, every record is treated as healthy and the policy
// applied.
//
// The package is pure: no I/O, no clock and no random source of its own. Health is a function
// the caller supplies (unknown verdicts are the caller's to map, and are served as healthy);
// randomness is a uint64 per query.
//
// Two forms share one implementation, so they always agree for the same input:
//   - Select is the hot path for DNS answers: it writes record indices into the caller's buffer
//     and allocates nothing.
//   - Explain returns a Result that explains itself, for the status API's "what would this
//     location answer now": the policy, the rule applied, the answer, whether last resort was
//     used, and every candidate with its health.
package routing
