package location

import (
	"fmt"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location/routing"
)

// Explain says what this location answers now for the record set of name and type (e.g. "A"),
// and why, from the current snapshot and verdicts: for the status API. rnd is the random draw
// the answer would use. It allocates, and is not the query path.
func (s *Server) Explain(name, rtype string, rnd uint64) (routing.Result, error) {
	t, ok := dns.StringToType[rtype]
	if !ok {
		return routing.Result{}, fmt.Errorf("location: unknown type %q", rtype)
	}
	snap, v := s.snap.Load(), s.verdicts.Load()
	owner := canonical(name)
	z := snap.zoneOf(owner)
	if z == nil {
		return routing.Result{}, fmt.Errorf("location: %s is in no hosted zone", owner)
	}
	n := z.names[owner]
	if n == nil {
		return routing.Result{}, fmt.Errorf("location: %s does not exist in zone %s", owner, z.name)
	}
	rs := n.find(t)
	if rs == nil {
		return routing.Result{}, fmt.Errorf("location: %s has no %s record set", owner, rtype)
	}
	if rs.cfg.Policy == config.PolicyNearest {
		return routing.ExplainNearest(rs.cfg, v.health, s.locality.Load())
	}
	return routing.Explain(rs.cfg, v.health, rnd)
}
