// Package location is the authoritative DNS server of a Vigil location. It answers the hosted
// zones over UDP and TCP from an immutable snapshot of the configuration and this location's
// own verdicts, choosing records with the routing package's pure answer selection.
//
// What it owns:
//   - the snapshot: zones compiled once per configuration into owner-name maps and pre-built
//     resource records, swapped atomically so that no query ever sees half a zone;
//   - the answer: DNS as a resolver expects it from an authoritative server (AA, REFUSED outside
//     the hosted zones, NXDOMAIN against NODATA with the SOA and the RFC 2308 negative TTL, SOA
//     and NS at the apex, in-zone CNAME chains, EDNS0 with a 1,232-byte UDP payload, BADVERS,
//     truncation and TCP, minimal ANY answers as RFC 8482 asks, NOTIMP and FORMERR);
//   - the listeners: a main listener that answers every hosted zone and, as Route 53 runs them,
//     one listener per virtual name server this location hosts, which answers a zone only when
//     that name server is in the zone's shard. Every listener has its own bounded worker pool
//     and query budget, so a flood aimed at one zone's name servers cannot starve the others;
//   - the answer cache (cache.go, fastpath.go): UDP answers in wire form, keyed by question,
//     type, listener, EDNS, DO and payload class, patched per query with its ID, RD, CD and
//     question case, stale from the first change of the snapshot, signers, locality, or the
//     verdicts or served SOA of their zone; what cannot be cached takes the full path;
//   - the UDP sockets: one per core bound with SO_REUSEPORT on Linux, read and written in
//     batches with recvmmsg and sendmmsg without an allocation per datagram (udp_linux.go);
//   - optional response rate limiting per client network, in a fixed-size table, applied to
//     cached answers too;
//   - transfers out (xfr.go): AXFR and IXFR over TCP with TSIG of the zones SetTransfers names,
//     as this location answers them, a serial per zone that follows the answers (serial.go),
//     and NOTIFY to the secondaries on every change (notify.go);
//   - its metrics, registered on the registerer it is given.
//
// Wildcards are not in Vigil's configuration model, so the server synthesises no answer from
// them: a name exists only when a record set (or a name below it) is configured there.
//
// The server is built on github.com/miekg/dns (v1) for the wire format of the full path; its
// own loops read and write the sockets, so the number of goroutines is fixed by the configuration rather than by
// the traffic (BENCHMARKS.md compares v1 with v2 and explains the choice).
package location
