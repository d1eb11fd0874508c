// Package sim proves Vigil's behaviour under faults: it runs scenarios (a named story such as
// the São Paulo partition, or a script from a file) on an in-process network (the dev network
// of package dev, or a network of agent runtimes of package node whose checkers can be taken
// offline one by one), records every DNS answer each location gave over its real socket and
// every verdict change it made, and audits the history afterwards with package audit (pure:
// an answer is allowed when some combination of the verdicts that may have been in force at
// that location while the query was in flight selects it by the record set's routing policy,
// with last resort only when no record was healthy). A fault model says which verdicts every
// location should settle on, so that a script can wait for them and a run can count the
// verdicts of healthy endpoints that flipped.
package sim
