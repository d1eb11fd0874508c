// Package checker owns probing: it runs the TCP, HTTP and HTTPS probes of the checks assigned
// to one checker node, on a schedule spread over each check's interval and under a global
// concurrency limit, turns probe results into reports through a rise/fall state machine, and
// withdraws its reports when the node itself cannot reach anything.
//
// The network is reached only through two small interfaces, Dialer and Resolver, which default
// to net.Dialer and net.Resolver and which a simulated network may replace. Every address is
// checked against an AddressPolicy at dial time, on the first request and on every redirect
// hop, so a target cannot point a checker at loopback, private or other reserved addresses
// unless the operator allows it.
//
// Reports leave through callbacks (Options.OnReport, Options.OnSelf); the package knows
// nothing of gossip.
package checker
