// Package sim proves Vigil's behaviour under faults: it runs scenarios (a named story such as
// the São Paulo partition, or a script from a file) on the in-process dev network, records
// every DNS answer each location gave and every verdict change it made, and checks the
// history afterwards.
//
// The history checker is pure: an answer is allowed when some combination of the verdicts
// that may have been in force at that location while the query was in flight selects it by
// the record set's routing policy, with last resort only when no record was healthy.
package sim
