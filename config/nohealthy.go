package config

// NoHealthy is what a record set answers when none of the records its policy considers is
// healthy.
type NoHealthy string

// The choices of a record set with no healthy record.
const (
	// NoHealthyAll answers as if every record were healthy: Route 53's last resort, and the
	// default (an empty value means it).
	NoHealthyAll NoHealthy = "all"
	// NoHealthyNoData answers no data: NOERROR with no records, the SOA for negative caching.
	NoHealthyNoData NoHealthy = "nodata"
	// NoHealthyFallback answers the record set's fallback record (a "sorry server").
	NoHealthyFallback NoHealthy = "fallback"
)

// validateNoHealthy checks a record set's no_healthy choice and its fallback value at rp.
func (v *validator) validateNoHealthy(rs *RecordSet, rp string, policy Policy, typeOK bool) {
	switch rs.NoHealthy {
	case "", NoHealthyAll:
		if rs.Fallback != "" {
			v.add(join(rp, "fallback"), "a fallback is answered only with no_healthy: fallback")
		}
		return
	case NoHealthyNoData, NoHealthyFallback:
	default:
		v.add(join(rp, "no_healthy"), "unknown choice %q: want all, nodata or fallback", rs.NoHealthy)
		return
	}
	switch policy {
	case PolicySimple, "":
		v.add(join(rp, "no_healthy"), "a simple record set does not consult health checks: no_healthy needs a failover, weighted or multivalue policy")
	case PolicyNearest:
		// nearest falls back region by region and, with no region healthy, answers every
		// record: a choice here would be accepted and never served.
		v.add(join(rp, "no_healthy"), "the nearest policy answers every record when no region has a healthy one: no_healthy needs a failover, weighted or multivalue policy")
	}
	if rs.Alias != "" {
		v.add(join(rp, "no_healthy"), "an alias answers as its target does: set no_healthy on the target")
	}
	if rs.Type == TypeCNAME && rs.NoHealthy == NoHealthyNoData {
		v.add(join(rp, "no_healthy"), "a CNAME record set cannot answer no data: use all or fallback")
	}
	if rs.NoHealthy == NoHealthyNoData {
		if rs.Fallback != "" {
			v.add(join(rp, "fallback"), "a fallback is answered only with no_healthy: fallback")
		}
		return
	}
	switch {
	case rs.Fallback == "":
		v.add(join(rp, "fallback"), "required with no_healthy: fallback: the record answered when none is healthy")
	case typeOK:
		if p := valueProblem(rs.Type, rs.Fallback); p != "" {
			v.add(join(rp, "fallback"), "%s", p)
		}
	}
}
