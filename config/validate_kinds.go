package config

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	"github.com/vigil-dns/vigil/internal/safetext"
)

// Limits of the fields of grpc and dns checks and of CA bundles.
const (
	// MaxTLSCA is the longest tls_ca: a private CA's certificates, not a system bundle.
	MaxTLSCA     = 64 << 10
	maxGRPCName  = 255
	defaultRcode = "NOERROR"
)

// DNSRcodes are the response codes a dns check may expect, by their names in RFC 1035 and
// RFC 2136 (values 0 to 10).
func DNSRcodes() []string {
	return []string{"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED",
		"YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE"}
}

// dnsProbeTypes are the types a dns check may query and compare answers of.
func dnsProbeTypes() []RecordType {
	return []RecordType{TypeA, TypeAAAA, TypeCNAME, TypeTXT, TypeMX, TypeNS, TypeSOA}
}

// usesTLS reports whether a check of c's protocol speaks TLS.
func usesTLS(c *Check) bool {
	return c.Protocol == ProtocolHTTPS || c.Protocol == ProtocolGRPC && c.GRPC != nil && c.GRPC.TLS
}

// validateTLS checks the TLS fields of a probed check: sni and tls_ca, only where TLS is
// spoken.
func (v *validator) validateTLS(c *Check, p string) {
	tls := usesTLS(c)
	const where = "only https checks and grpc checks with tls use"
	switch {
	case c.SNI == "":
	case !tls:
		v.add(join(p, "sni"), "%s sni", where)
	case hostProblem(c.SNI) != "":
		v.add(join(p, "sni"), "invalid server name %q: %s", c.SNI, hostProblem(c.SNI))
	case isIP(c.SNI):
		v.add(join(p, "sni"), "must be a host name, not an IP address, got %q", c.SNI)
	}
	switch {
	case c.TLSCA == "":
	case !tls:
		v.add(join(p, "tls_ca"), "%s tls_ca", where)
	case !c.TLSVerify:
		v.add(join(p, "tls_ca"), "is not used when tls_verify is false: remove one of them")
	case len(c.TLSCA) > MaxTLSCA:
		v.add(join(p, "tls_ca"), "must be at most %d bytes (a private CA's certificates), got %d", MaxTLSCA, len(c.TLSCA))
	default:
		if prob := pemProblem(c.TLSCA); prob != "" {
			v.add(join(p, "tls_ca"), "%s", prob)
		}
	}
}

// pemProblem says why s is not a bundle of PEM certificates, or returns "".
func pemProblem(s string) string {
	rest := []byte(s)
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		n++
		if b.Type != "CERTIFICATE" {
			return fmt.Sprintf("PEM block %d is %s, want CERTIFICATE", n, shortQuote(b.Type))
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Sprintf("certificate %d: %v", n, err)
		}
	}
	if n == 0 {
		return "holds no PEM certificate (want one or more -----BEGIN CERTIFICATE----- blocks)"
	}
	return ""
}

// validateGRPC checks a grpc check's settings, and that no other check has them.
func (v *validator) validateGRPC(c *Check, p string) {
	if c.Protocol != ProtocolGRPC {
		if c.GRPC != nil {
			v.add(join(p, "grpc"), "only grpc checks use grpc")
		}
		return
	}
	if c.GRPC == nil {
		return // the whole server, without TLS
	}
	s := c.GRPC.Service
	switch {
	case len(s) > maxGRPCName:
		v.add(join(p, "grpc.service"), "must be at most %d bytes, got %d", maxGRPCName, len(s))
	case safetext.Check(s) != nil:
		v.add(join(p, "grpc.service"), "must be printable UTF-8, got %q", s)
	}
}

// validateDNS checks a dns check's query and expected answer, and that no other check has
// them. Empty fields count as their defaults.
func (v *validator) validateDNS(c *Check, p string) {
	if c.Protocol != ProtocolDNS {
		if c.DNS != nil {
			v.add(join(p, "dns"), "only dns checks use dns")
		}
		return
	}
	p += ".dns"
	d := c.DNS
	if d == nil || d.Name == "" {
		v.add(join(p, "name"), "required: the name to query, e.g. www.example.com")
		if d == nil {
			return
		}
	} else if prob := nameProblem(absName(d.Name)); prob != "" {
		v.add(join(p, "name"), "invalid name %q: %s", d.Name, prob)
	}
	typ := RecordType(strings.ToUpper(string(d.Type)))
	if typ == "" {
		typ = TypeA
	}
	typeOK := slices.Contains(dnsProbeTypes(), typ)
	if !typeOK {
		v.add(join(p, "type"), "must be A, AAAA, CNAME, TXT, MX, NS or SOA, got %q", d.Type)
	}
	rcode := strings.ToUpper(d.Rcode)
	if rcode == "" {
		rcode = defaultRcode
	}
	if !slices.Contains(DNSRcodes(), rcode) {
		v.add(join(p, "rcode"), "must be one of %s, got %q", strings.Join(DNSRcodes(), ", "), d.Rcode)
	}
	switch {
	case d.Answer == "":
	case typ == TypeSOA:
		v.add(join(p, "answer"), "a SOA check compares only the rcode: remove answer")
	case rcode != defaultRcode:
		v.add(join(p, "answer"), "an expected answer needs rcode NOERROR, got %s", rcode)
	case typeOK && valueProblem(typ, d.Answer) != "":
		v.add(join(p, "answer"), "%s", valueProblem(typ, d.Answer))
	}
	if t := strings.ToLower(d.Transport); t != "" && t != "udp" && t != "tcp" {
		v.add(join(p, "transport"), "must be udp or tcp, got %q", d.Transport)
	}
}
