package location

import (
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// difference is a way in which the location answers otherwise than NSD, on purpose: the field
// it shows in, the responses it explains, and why. docs/dns.md lists each one.
type difference struct {
	name    string
	field   string
	applies func(q diffQuery, vigil, nsd view) bool
	reason  string
}

// knownDifferences are the documented differences between the location and NSD 4.6 (with
// minimal-responses: yes). Each predicate is as narrow as the difference, so that any other
// disagreement in the same field still fails the test.
func knownDifferences() []difference {
	var out []difference
	out = append(out,
		difference{
			name:    "addresses of MX and SRV targets",
			field:   "additional",
			applies: func(_ diffQuery, a, b view) bool { return targetAddressesOnly(a, b) },
			reason: "The location adds the addresses the zone holds for MX and SRV targets (RFC 1035 §3.3.9, " +
				"RFC 2782), left out when they do not fit (RFC 2181 §9); NSD with minimal-responses adds " +
				"additional data to referrals only.",
		},
		difference{
			name:  "CD copied",
			field: "cd",
			applies: func(q diffQuery, a, _ view) bool {
				return q.msg != nil && q.msg.CheckingDisabled && a.header["cd"] == "true"
			},
			reason: "The location copies CD into the response, as RFC 4035 §3.1.6 asks of a security-aware server; NSD clears it for an unsigned zone.",
		},
		difference{
			name:  "RD of a FORMERR for a question count other than 1",
			field: "rd",
			applies: func(q diffQuery, a, b view) bool {
				return a.header["rcode"] == "FORMERR" && b.header["rcode"] == "FORMERR" && questionCount(q) > 1
			},
			reason: "RD is copied into every response (RFC 1035 §4.1.1); NSD clears it when a query has several questions.",
		},
		difference{
			name:    "question of a NOTIMP",
			field:   "question",
			applies: func(_ diffQuery, a, b view) bool { return a.header["rcode"] == "NOTIMP" && len(b.question) == 0 },
			reason:  "The location echoes the question of a query whose opcode it does not implement, so that the client can match the response; NSD sends none. RFC 1035 does not say.",
		},
		difference{
			name:  "NOTIFY",
			field: "rcode",
			applies: func(q diffQuery, a, _ view) bool {
				return q.msg != nil && q.msg.Opcode == dns.OpcodeNotify && a.header["rcode"] == "NOTIMP"
			},
			reason: "A location has no primary to hear from: its zones come from the control plane, so it answers NOTIFY (RFC 1996) NOTIMP; NSD answers NXDOMAIN for a zone it is not a secondary of.",
		},
		difference{
			name:    "zone transfers",
			field:   "rcode",
			applies: func(q diffQuery, a, _ view) bool { return isTransfer(q) && a.header["rcode"] == "REFUSED" },
			reason:  "The location refuses every zone transfer, REFUSED as a policy refusal (RFC 5936 lets a server refuse them); NSD answers AXFR over UDP NOTIMP and IXFR NOTAUTH.",
		},
	)
	for _, field := range []string{"rcode", "aa", "authority", "question"} {
		out = append(out, difference{
			name:  "question for type OPT",
			field: field,
			applies: func(q diffQuery, a, _ view) bool {
				return q.qtype == dns.TypeOPT && a.header["rcode"] == "FORMERR"
			},
			reason: "OPT is a pseudo-record of a message's additional section (RFC 6891 §6.1.1), never data of a zone: the location takes a question for it as malformed, NSD answers NODATA.",
		})
	}
	return out
}

// section returns the records of a view's section named field.
func section(v view, field string) []string {
	switch field {
	case "answer":
		return v.answer
	case "authority":
		return v.authority
	}
	return v.additional
}

// lowerAll returns ss lower-cased and sorted again.
func lowerAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	slices.Sort(out)
	return out
}

// targetAddressesOnly reports whether the location's additional section is NSD's plus only A
// and AAAA records of names that the location's MX and SRV answers point at.
func targetAddressesOnly(a, b view) bool {
	targets := map[string]bool{}
	for _, s := range a.answer {
		rr, err := dns.NewRR(s)
		if err != nil {
			return false
		}
		switch rr := rr.(type) {
		case *dns.MX:
			targets[strings.ToLower(rr.Mx)] = true
		case *dns.SRV:
			targets[strings.ToLower(rr.Target)] = true
		}
	}
	nsd := lowerAll(b.additional)
	extra := 0
	for _, s := range lowerAll(a.additional) {
		if slices.Contains(nsd, s) {
			continue
		}
		rr, err := dns.NewRR(s)
		if err != nil {
			return false
		}
		if t := rr.Header().Rrtype; (t != dns.TypeA && t != dns.TypeAAAA) || !targets[rr.Header().Name] {
			return false
		}
		extra++
	}
	return extra > 0 && extra+len(nsd) == len(a.additional)
}

// questionCount returns the question count of a query's header.
func questionCount(q diffQuery) int {
	if q.msg != nil {
		return len(q.msg.Question)
	}
	if len(q.raw) < 6 {
		return 0
	}
	return int(q.raw[4])<<8 | int(q.raw[5])
}

// isTransfer reports whether q asks for a zone transfer.
func isTransfer(q diffQuery) bool { return q.qtype == dns.TypeAXFR || q.qtype == dns.TypeIXFR }
