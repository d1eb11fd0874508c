// Package checker owns probing: it runs the probes of the checks assigned to one checker node
// and turns their results into reports. The probes (TCP, HTTP, HTTPS, gRPC health and DNS) run
// on a schedule spread over each check's interval, under a global concurrency limit; a
// rise/fall state machine turns their results into reports, which the checker withdraws when
// the node itself cannot reach anything.
//
// HTTP/1.1 is the package's own client around net/http's response parser (one request per
// fresh connection, or, for the checks that set keep_alive, GET, HEAD and OPTIONS on the
// connection the check's previous probe kept, within bounds that reuse.go states; interim
// responses read past, the head bounded by MaxResponseHead); HTTP/2, for the checks that set
// http2, for servers that speak only h2 and for gRPC, is net/http's, run on the probe's own
// connection, and the servers that speak only h2 are remembered for a while so that they are
// offered h2 alone. DNS queries use miekg/dns.
//
// The network is reached only through two small interfaces, Dialer and Resolver, which default
// to net.Dialer and net.Resolver and which a simulated network may replace. Every address is
// checked against an AddressPolicy at dial time, on the first request and on every redirect
// hop, so a target cannot point a checker at loopback, private or other reserved addresses
// unless the operator allows it.
//
// Which checks a checker probes is Assignment's to decide: the shards of every check (package
// shard) kept up to date as the configuration and the membership change, and the checks it
// keeps probing after it left their shards until their new holders report them (make before
// break, NextHandoffs). The node gives it the time, the membership and what gossip holds.
//
// Reports leave through callbacks (Options.OnReport, Options.OnSelf); the package knows
// nothing of gossip.
package checker
