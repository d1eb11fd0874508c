package control

import (
	"errors"
	"slices"
	"strings"

	"github.com/vigil-dns/vigil/config"
)

// State is everything the control plane stores, as of one raft index. A State is never
// changed after it is published: a command produces a new one.
type State struct {
	// Index is the raft index of the last command that changed the state; 0 for an empty
	// store that has never been written.
	Index uint64 `json:"index"`
	// Document is the configuration: regions, checks, zones and record sets.
	Document config.Document `json:"document"`
	// Shards maps each zone (canonical name, lower case with the final dot) to the numbers of
	// its name servers, from the stateful allocator. Empty unless name_servers.mode is
	// "stateful".
	Shards map[string][]int `json:"shards,omitempty"`
	// Voters maps the raft ID of each voter to the base URL of its HTTP API, so that any
	// voter can forward a write to the leader and a Watcher can find every voter.
	Voters map[string]string `json:"voters,omitempty"`
}

// Sentinel errors that the API maps to status codes.
var (
	// ErrNotFound: the check, zone, record set or voter named does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a create named something that already exists.
	ErrConflict = errors.New("already exists")
)

// emptyState is the state of a store that has never been written.
func emptyState() *State { return &State{Document: config.DefaultDocument()} }

// clone returns a shallow copy of s whose maps may be changed without touching s.
func (s *State) clone() *State {
	c := *s
	c.Shards = make(map[string][]int, len(s.Shards))
	for k, v := range s.Shards {
		c.Shards[k] = v
	}
	c.Voters = make(map[string]string, len(s.Voters))
	for k, v := range s.Voters {
		c.Voters[k] = v
	}
	return &c
}

// Check returns the check with id.
func (s *State) Check(id string) (config.Check, bool) {
	if i := findCheck(s.Document.Checks, id); i >= 0 {
		return s.Document.Checks[i], true
	}
	return config.Check{}, false
}

// Zone returns the zone with the given name, in any case and with or without the final dot.
func (s *State) Zone(name string) (config.Zone, bool) {
	if i := findZone(s.Document.Zones, name); i >= 0 {
		return s.Document.Zones[i], true
	}
	return config.Zone{}, false
}

// RecordSet returns the record set of the zone with the given owner name and type.
func (s *State) RecordSet(zone, name string, typ config.RecordType) (config.RecordSet, bool) {
	z, ok := s.Zone(zone)
	if !ok {
		return config.RecordSet{}, false
	}
	if i := findRecordSet(z, name, typ); i >= 0 {
		return z.RecordSets[i], true
	}
	return config.RecordSet{}, false
}

// VoterURLs returns the API URLs of the voters, sorted.
func (s *State) VoterURLs() []string {
	out := make([]string, 0, len(s.Voters))
	for _, u := range s.Voters {
		out = append(out, u)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CanonicalZone returns a zone name as the control plane compares it: lower case, with the
// final dot.
func CanonicalZone(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	if !strings.HasSuffix(n, ".") {
		n += "."
	}
	return n
}

// CanonicalOwner returns the absolute lower-case owner name of a record set in zone: "@" is
// the apex, a name with a final dot is absolute, any other is relative to the zone.
func CanonicalOwner(zone, name string) string {
	z := CanonicalZone(zone)
	n := strings.ToLower(strings.TrimSpace(name))
	switch {
	case n == "@" || n == "":
		return z
	case strings.HasSuffix(n, "."):
		return n
	default:
		return n + "." + z
	}
}

func findCheck(checks []config.Check, id string) int {
	return slices.IndexFunc(checks, func(c config.Check) bool { return c.ID == id })
}

func findZone(zones []config.Zone, name string) int {
	want := CanonicalZone(name)
	return slices.IndexFunc(zones, func(z config.Zone) bool { return CanonicalZone(z.Name) == want })
}

func findRecordSet(z config.Zone, name string, typ config.RecordType) int {
	want := CanonicalOwner(z.Name, name)
	return slices.IndexFunc(z.RecordSets, func(rs config.RecordSet) bool {
		return CanonicalOwner(z.Name, rs.Name) == want && strings.EqualFold(string(rs.Type), string(typ))
	})
}
