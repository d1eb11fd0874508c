package verify

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location/routing"
)

// Expectation is what a location should answer for one record set, by its verdicts.
type Expectation struct {
	// Pool holds the values an answer is drawn from, normalised and sorted.
	Pool []string `json:"pool"`
	// Size is how many values an answer holds.
	Size int `json:"size"`
	// Rule is the routing rule the answer is given by.
	Rule routing.Rule `json:"rule"`
}

// Key identifies the expectation, so that a change of what is expected can be seen.
func (e Expectation) Key() string {
	return fmt.Sprintf("%s %d %s", e.Rule, e.Size, strings.Join(e.Pool, ","))
}

// Expect returns what a location whose verdicts are states (check id to "healthy",
// "unhealthy" or "unknown") should answer for rs. As a location serves them, an unknown
// verdict and a check it has no verdict of count as healthy.
func Expect(rs *config.RecordSet, states map[string]string) (Expectation, error) {
	p, err := routing.Possibilities(rs, func(id string) bool { return states[id] != "unhealthy" })
	if err != nil {
		return Expectation{}, fmt.Errorf("verify: %w", err)
	}
	e := Expectation{Size: p.Size, Rule: p.Rule, Pool: make([]string, 0, len(p.Pool))}
	for _, i := range p.Pool {
		if i == len(rs.Records) { // the fallback record (config.NoHealthyFallback)
			e.Pool = append(e.Pool, normalise(rs.Fallback))
			continue
		}
		e.Pool = append(e.Pool, normalise(rs.Records[i].Value))
	}
	slices.Sort(e.Pool)
	return e, nil
}

// Judge compares the values of an answer with e: "" when the answer is one e allows,
// otherwise why not.
func (e Expectation) Judge(got []string) string {
	seen := make([]string, 0, len(got))
	for _, g := range got {
		g = normalise(g)
		if slices.Contains(seen, g) {
			return fmt.Sprintf("answered %s twice", g)
		}
		seen = append(seen, g)
		if _, ok := slices.BinarySearch(e.Pool, g); !ok {
			return fmt.Sprintf("answered %s, which its verdicts exclude (%s: %s)", g, e.Rule, strings.Join(e.Pool, " "))
		}
	}
	if len(seen) != e.Size {
		return fmt.Sprintf("answered %d records, its verdicts give %d (%s: %s)", len(seen), e.Size, e.Rule, strings.Join(e.Pool, " "))
	}
	return ""
}

// normalise writes an address value the way an answer on the wire reads; other values stay.
func normalise(v string) string {
	if a, err := netip.ParseAddr(v); err == nil {
		return a.Unmap().String()
	}
	return v
}

// Verifiable reports whether rs is a record set verification asks about: A or AAAA, records
// of its own (not an alias), at least one of them with a health check. A nearest set is not
// (yet): what it answers depends on where each location stands, which Expect does not know.
func Verifiable(rs *config.RecordSet) bool {
	if rs.Type != config.TypeA && rs.Type != config.TypeAAAA || rs.Alias != "" || rs.Policy == config.PolicyNearest {
		return false
	}
	return slices.ContainsFunc(rs.Records, func(r config.Record) bool { return r.HealthCheck != "" })
}
