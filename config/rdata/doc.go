// Package rdata reads the data of DNS records as Vigil's configuration writes them into the
// resource records a DNS location serves. Record values look like "192.0.2.1",
// "10 mail.example.com." and "\"v=spf1 -all\"". It is the one parser of record data:
// `vigil validate`, the control plane's write path (through package config) and the location's
// zone compiler all call it, so that a value accepted anywhere is served, byte for byte as
// written.
//
// It owns the rules of record data: which values each type takes, how TXT and CAA strings
// are quoted and escaped, the 255-byte limit of a character string, and the one canonical
// form in which equal data compares equal. Owner names and the rules between record sets
// (a CNAME alone at its name, DS beside NS) belong to package config.
package rdata
