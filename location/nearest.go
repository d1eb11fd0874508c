package location

import (
	"slices"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/location/routing"
)

// SetLocality tells the server where its location stands, for nearest record sets: its own
// region and the other regions from the nearest on (with the round-trip times measured to
// them, for explanations). Until it is set, a nearest set answers in its own order of
// regions. The server keeps a copy.
func (s *Server) SetLocality(loc routing.Locality) {
	c := routing.Locality{Region: loc.Region, Order: slices.Clone(loc.Order)}
	if loc.RTT != nil {
		c.RTT = make(map[string]time.Duration, len(loc.RTT))
		for r, d := range loc.RTT {
			c.RTT[r] = d
		}
	}
	old := s.locality.Swap(&c)
	if old == nil || old.Region != c.Region || !slices.Equal(old.Order, c.Order) {
		// The answers follow the region and the order; the round-trip times only explain.
		s.cache.invalidate()
		s.xfr.poke() // a nearest set transfers the region it answers
	}
}

// Locality returns the locality in use; the zero value until SetLocality.
func (s *Server) Locality() routing.Locality {
	if l := s.locality.Load(); l != nil {
		return *l
	}
	return routing.Locality{}
}

// appendNearest appends to dst the records a nearest record set answers at this location.
func (s *Server) appendNearest(dst []dns.RR, scr *scratch, rs *rrset, v *verdicts) []dns.RR {
	idx, rule := routing.SelectNearest(rs.cfg, v.health, s.locality.Load(), scr.idx[:0])
	scr.idx = idx[:0]
	for _, i := range idx {
		dst = append(dst, rs.rrs[i])
	}
	if rule.LastResort() {
		scr.lastResort(s.metrics, rs)
	}
	return dst
}
