// Package sim proves Vigil's behaviour under faults: it runs scenarios on an in-process
// network, records every answer and verdict change, and audits the history afterwards. A
// scenario is a named story such as the São Paulo partition, or a script from a file; the
// network is the dev network of package dev, or a network of agent runtimes of package node
// whose checkers can be taken offline one by one. It records every DNS answer each location
// gave over its real socket and every verdict change it made, and audits them with package
// answeraudit (pure: an answer is allowed when some combination of the verdicts that may have
// been in force at that location while the query was in flight selects it by the record set's
// routing policy, with last resort only when no record was healthy). A fault model says which
// verdicts every location should settle on, so that a script can wait for them and a run can
// count the verdicts of healthy endpoints that flipped.
//
// # Layout
//
// Every experiment is laid out the same way, in files named after it: name.go holds its
// configuration and how it runs, name_figures.go what it measured (where it measures something
// of its own), name_report.go its part of the report, and name_*.go the parts only it needs.
//
//   - run: a scripted run (Options, Run, Result, WriteReport); runner.go runs its steps,
//     record.go samples the verdicts and asks the locations, stall.go measures the harness's
//     own stalls, oracle.go hands the run to the independent oracle.
//   - chaos: a script generated from a seed (Chaos), its steps and their faults
//     (chaos_steps.go) and control-plane writes (chaoswrite.go).
//   - poison: the poison networks' document, network, hostile endpoints and probe schedule.
//   - growth: grow and measure steps on the nodes network, with resources.go's per-node
//     measures.
//   - ddos: a query flood against one zone's name servers on a network of its own (RunDDoS).
//
// The networks a script names are looked up among the network kinds (network.go): the dev
// network, the nodes network (nodes.go, a cluster of package cluster) and the poison
// networks, each with how it adapts the document and how it starts. Scripts are parsed in script.go; the named scenarios are in
// scenarios.go; the fault model is model.go.
package sim
