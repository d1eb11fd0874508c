// Package dnsbench compares, in one benchmark run, the two miekg/dns libraries a location could
// be built on: github.com/miekg/dns (v1, in maintenance) and codeberg.org/miekg/dns (v2, v0.x).
// It is a module of its own so that the v2 library and its dependencies stay out of Vigil's
// module graph; it holds no code that Vigil runs.
//
// The work measured is what an authoritative server does for every query: unpack the query,
// then pack a typical response (question, two A records, four NS records in the authority
// section, an EDNS0 OPT record), with name compression, into a reused buffer.
package dnsbench
