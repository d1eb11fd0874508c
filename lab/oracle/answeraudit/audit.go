// Package answeraudit checks a recorded history of a Vigil network against itself. It checks
// every DNS answer a location gave, as a client saw it, against the verdict changes that
// location made, as a sampler of its verdicts saw them. An answer is allowed when some
// combination of the verdicts that may have been in force at that location while the query was
// in flight selects it by the record set's routing policy (package oracle's rules), with last
// resort only when no record was healthy; every other answer is a violation, reported with its
// evidence.
//
// It is pure: it takes a History and returns Findings, with no clock, socket or goroutine.
// The name says what it does, apart from its neighbours: package verify asks live locations
// and compares their answers with their published digests; package oracle judges answers
// from the faults alone, never reading a verdict; package history is what a location
// remembers of its own past. An audit reads the verdicts the run recorded and the answers,
// after the fact. Package sim records the histories (its sampler and queriers) and audits
// them at the end of every run.
package answeraudit

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/lab/oracle"
)

// maxChecksPerSet bounds the checks of one record set the auditor combines (2^n
// combinations of their verdicts).
const maxChecksPerSet = 12

// Violation is an answer that no verdict valid at its location allowed.
type Violation struct {
	// Answer is the offending answer.
	Answer Answer
	// Reason says what was wrong.
	Reason string
	// Verdicts lists, for each check of the record set, the verdicts that may have been in
	// force at the location while the query was in flight.
	Verdicts []string
}

// String says the violation with its evidence.
func (v Violation) String() string {
	return fmt.Sprintf("%v: %s; verdicts in force: %s", v.Answer, v.Reason, strings.Join(v.Verdicts, "; "))
}

// Findings are what an audit found in a history.
type Findings struct {
	// Answers is how many answers were audited; Unanswered how many queries got none.
	Answers, Unanswered int
	// LastResort counts the answers that only last resort allowed; LastResortAt counts them
	// by location.
	LastResort   int
	LastResortAt map[string]int
	// Violations are the answers no valid verdict allowed, in history order.
	Violations []Violation
	// Excused are the answers that only a starved check's other value allowed
	// (Auditor.Starved): not violations.
	Excused []Violation
}

// Auditor audits histories of the record sets it knows.
type Auditor struct {
	// Sets maps each fully qualified lower-case name to its A record set.
	Sets map[string]*config.RecordSet
	// Slack widens each query's window on both sides: the propagation slack allowed between
	// a verdict the sampler saw and the answer the DNS server gave.
	Slack time.Duration
	// Starved, when set, reports whether the harness stalled long enough around [from, to]
	// to fail check's probes at location and turn its verdict, and back, unseen between two
	// samples. An answer that only such a check's other value allows is excused
	// (Findings.Excused), not a violation. Nil: none is.
	Starved func(location, check string, from, to time.Time) bool
}

// New returns an auditor of the A record sets of doc's zones.
func New(doc *config.Document, slack time.Duration) *Auditor {
	c := &Auditor{Sets: map[string]*config.RecordSet{}, Slack: slack}
	for _, z := range doc.Zones {
		apex := strings.ToLower(dns.Fqdn(z.Name))
		for i := range z.RecordSets {
			rs := &z.RecordSets[i]
			if rs.Type != "A" {
				continue
			}
			c.Sets[oracle.OwnerName(rs.Name, apex)] = rs
		}
	}
	return c
}

// span is a verdict that may have been in force at a location from From to To.
type span struct {
	from, to time.Time // zero to: still in force at the end
	serving  bool
	what     string
}

// Audit checks every answer of h against the verdict changes of h.
func (c *Auditor) Audit(h History) Findings {
	spans := map[[2]string][]span{} // by location and check
	for i, ch := range h.Changes {
		key := [2]string{ch.Location, ch.Check}
		s := spans[key]
		if n := len(s); n > 0 {
			s[n-1].to = ch.At
		}
		spans[key] = append(s, span{from: ch.After, serving: ch.Serving, what: fmt.Sprintf("%s since %s", ch.State, h.Changes[i].At.Format("15:04:05.000"))})
	}
	out := Findings{LastResortAt: map[string]int{}}
	for _, a := range h.Answers {
		if a.Err != "" {
			out.Unanswered++
			continue
		}
		out.Answers++
		last, v := c.auditOne(a, spans)
		if v != nil && v.Reason == excusedReason {
			out.Excused = append(out.Excused, *v)
		} else if v != nil {
			out.Violations = append(out.Violations, *v)
		} else if last {
			out.LastResort++
			out.LastResortAt[a.Location]++
		}
	}
	return out
}

// auditOne checks one answer; it reports whether only last resort allowed it, or why no
// verdict did.
func (c *Auditor) auditOne(a Answer, spans map[[2]string][]span) (bool, *Violation) {
	rs, ok := c.Sets[a.Name]
	if !ok {
		return false, &Violation{Answer: a, Reason: "no A record set of this name is known"}
	}
	if a.Rcode != dns.RcodeSuccess {
		return false, &Violation{Answer: a, Reason: "a record set with records must be answered, got " + dns.RcodeToString[a.Rcode]}
	}
	var checks []string
	for _, r := range rs.Records {
		if r.HealthCheck != "" && !slices.Contains(checks, r.HealthCheck) {
			checks = append(checks, r.HealthCheck)
		}
	}
	if len(checks) > maxChecksPerSet {
		return false, &Violation{Answer: a, Reason: fmt.Sprintf("the record set has %d checks, more than the auditor combines (%d)", len(checks), maxChecksPerSet)}
	}
	from, to := a.Sent.Add(-c.Slack), a.Received.Add(c.Slack)
	options := make([][]bool, len(checks)) // the serving values each check may have had
	var evidence []string
	for i, id := range checks {
		var whats []string
		s := spans[[2]string{a.Location, id}]
		if len(s) == 0 || from.Before(s[0].from) {
			// No verdict yet: DNS serves a check it has no verdict for as healthy.
			options[i] = append(options[i], true)
			whats = append(whats, "none")
		}
		for _, sp := range s {
			if sp.from.After(to) || (!sp.to.IsZero() && sp.to.Before(from)) {
				continue
			}
			if !slices.Contains(options[i], sp.serving) {
				options[i] = append(options[i], sp.serving)
			}
			whats = append(whats, sp.what)
		}
		evidence = append(evidence, id+": "+strings.Join(whats, ", "))
	}
	matched, onlyLast := false, true
	pick := make([]bool, len(checks))
	var walk func(i int)
	walk = func(i int) {
		if i == len(checks) {
			al := oracle.Permitted(rs, func(id string) bool { return pick[slices.Index(checks, id)] })
			if al.Permits(a.Values) {
				matched = true
				onlyLast = onlyLast && al.LastResort
			}
			return
		}
		for _, v := range options[i] {
			pick[i] = v
			walk(i + 1)
		}
	}
	walk(0)
	if !matched && c.Starved != nil {
		widened := false
		for i, id := range checks {
			if c.Starved(a.Location, id, from, to) && len(options[i]) < 2 {
				options[i], widened = []bool{false, true}, true
				evidence[i] += " (starved by a harness stall: either)"
			}
		}
		if widened {
			if walk(0); matched {
				return false, &Violation{Answer: a, Reason: excusedReason, Verdicts: evidence}
			}
		}
	}
	if !matched {
		return false, &Violation{Answer: a, Reason: "no verdict in force at the location allowed this answer", Verdicts: evidence}
	}
	return onlyLast, nil
}

// excusedReason is the reason of an answer that only a starved check allowed.
const excusedReason = "excused: only a check starved by a harness stall allowed this answer"
