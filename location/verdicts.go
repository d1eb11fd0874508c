package location

import (
	"hash/maphash"

	"github.com/vigil-dns/vigil/location/routing"
)

// verdictShards is the number of parts of the verdict store: a change copies one part's
// map and the list of parts (8 KiB), never the whole store.
const verdictShards = 1024

// verdicts is an immutable set of health verdicts: the checks served as unhealthy. A check it
// does not hold is served as healthy (fail open). It is split into parts by a hash of the
// check id, so that a new version shares every part a change did not touch with the old one.
type verdicts struct {
	seed   maphash.Seed
	parts  []map[string]struct{} // nil: nothing unhealthy in that part
	down   int                   // checks held unhealthy
	health routing.Health
}

// VerdictChange is one check's new verdict for DNS: served as healthy or not. A check whose
// verdict is unknown, or that has none, is served as healthy.
type VerdictChange struct {
	Check   string
	Healthy bool
}

func newVerdictStore(seed maphash.Seed, parts []map[string]struct{}, down int) *verdicts {
	v := &verdicts{seed: seed, parts: parts, down: down}
	v.health = v.healthy
	return v
}

// healthy reports whether check id is served as healthy.
func (v *verdicts) healthy(id string) bool {
	part := v.parts[v.part(id)]
	if part == nil {
		return true
	}
	_, down := part[id]
	return !down
}

func (v *verdicts) part(id string) int {
	return int(maphash.String(v.seed, id) % verdictShards)
}

// fromMap returns the verdicts of healthy (check id to served healthy), under the same seed
// as v.
func (v *verdicts) fromMap(healthy map[string]bool) *verdicts {
	parts := make([]map[string]struct{}, verdictShards)
	down := 0
	for id, ok := range healthy {
		if ok {
			continue
		}
		p := v.part(id)
		if parts[p] == nil {
			parts[p] = map[string]struct{}{}
		}
		parts[p][id] = struct{}{}
		down++
	}
	return newVerdictStore(v.seed, parts, down)
}

// patch returns v with changes applied, copying only the parts they touch, and appends to
// changed the checks whose served health differs from v's.
func (v *verdicts) patch(changes []VerdictChange, changed []string) (*verdicts, []string) {
	parts := v.parts
	copied := false
	var own map[int]bool // parts already copied for this version
	down := v.down
	for _, c := range changes {
		p := v.part(c.Check)
		part := parts[p]
		_, isDown := part[c.Check]
		if isDown != !c.Healthy {
			changed = append(changed, c.Check)
		} else {
			continue
		}
		if !copied {
			parts = append([]map[string]struct{}(nil), v.parts...)
			own = map[int]bool{}
			copied = true
		}
		if !own[p] {
			next := make(map[string]struct{}, len(part)+1)
			for id := range part {
				next[id] = struct{}{}
			}
			parts[p], part = next, next
			own[p] = true
		}
		if c.Healthy {
			delete(part, c.Check)
			down--
			if len(part) == 0 {
				parts[p] = nil
				delete(own, p)
			}
		} else {
			part[c.Check] = struct{}{}
			down++
		}
	}
	if !copied {
		return v, changed
	}
	return newVerdictStore(v.seed, parts, down), changed
}

// Served reports whether the server answers now with check's records as healthy: its
// verdict is not unhealthy, or it has none.
func (s *Server) Served(check string) bool { return s.verdicts.Load().healthy(check) }
