package shard

import (
	"slices"
	"strconv"
)

// DefaultServerLocations is how many DNS locations host each virtual name server unless the
// caller says otherwise: two, so that losing one location leaves every server answering.
const DefaultServerLocations = 2

// Placement maps each virtual name server of a fleet onto the DNS locations that host it:
// the top r locations by rendezvous weight of (server, location). Adding a location moves to
// it only the servers it now ranks in; removing one moves only the servers it hosted. Every
// location computes the same placement from the same list of location ids.
type Placement struct {
	locations []string  // sorted, unique
	hosts     [][]int32 // server -> location positions, highest weight first
	serves    [][]int   // location position -> servers, ascending
}

// NewPlacement places a fleet of fleet servers on locations, perServer locations each (all of
// them when there are fewer; at least one).
func NewPlacement(fleet int, locations []string, perServer int) *Placement {
	region := NewRegion("", locations)
	perServer = max(perServer, 1)
	p := &Placement{locations: region.ids, hosts: make([][]int32, max(fleet, 0)),
		serves: make([][]int, region.Len())}
	for s := range p.hosts {
		p.hosts[s] = region.AppendShard(nil, HashKey("ns-"+strconv.Itoa(s)), perServer)
		for _, l := range p.hosts[s] {
			p.serves[l] = append(p.serves[l], s)
		}
	}
	return p
}

// Locations returns the locations that host server, highest weight first.
func (p *Placement) Locations(server int) []string {
	if server < 0 || server >= len(p.hosts) {
		return nil
	}
	out := make([]string, len(p.hosts[server]))
	for i, l := range p.hosts[server] {
		out[i] = p.locations[l]
	}
	return out
}

// Servers returns the virtual name servers that location hosts, ascending: what it answers
// as.
func (p *Placement) Servers(location string) []int {
	i, ok := slices.BinarySearch(p.locations, location)
	if !ok {
		return nil
	}
	return slices.Clone(p.serves[i])
}
