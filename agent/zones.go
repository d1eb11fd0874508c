package agent

import (
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/vigil-dns/vigil/checker/shard"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/location"
)

// installZones brings the DNS server's zones to s: the zones ch names are compiled again
// (or removed) into a patch of the snapshot in use, every other zone is kept; a change of
// settings, or a configuration taken whole, compiles every zone. A zone that does not compile
// keeps its previous version and does not hold the others back; the snapshot lists it with
// its error (readiness, status API, metric), until a version of it that compiles arrives.
func (n *Node) installZones(s *state.State, ch state.Changes) {
	if n.dns == nil {
		return
	}
	n.wakeVerdicts()
	n.zonesMu.Lock()
	defer n.zonesMu.Unlock()
	defer n.installSigners(s, ch)
	defer n.installTransfers(s, ch)
	servers, err := n.nameServers(s)
	if err != nil {
		n.log.Error("node: name-server shards; zones keep their own name servers", "err", err)
	}
	if ch.Full || ch.Settings || n.zonesAt == nil {
		zones := make([]location.ZonePatch, 0, s.NumZones())
		for h := range s.ZoneHeads() {
			zones = append(zones, n.zonePatch(s, h, servers))
		}
		old := n.dns.Snapshot()
		snap := old.RebuildZones(zones)
		n.dns.SetSnapshot(snap)
		n.forgetSets(old, snap, nil)
		n.zonesAt = s
		return
	}
	if len(ch.Zones) == 0 {
		n.zonesAt = s
		return
	}
	patches := make([]location.ZonePatch, 0, len(ch.Zones))
	for _, apex := range ch.Zones {
		h, ok := s.ZoneHead(apex)
		if !ok {
			patches = append(patches, location.ZonePatch{Apex: apex})
			continue
		}
		patches = append(patches, n.zonePatch(s, h, servers))
	}
	old := n.dns.Snapshot()
	snap := old.Patch(patches)
	n.dns.PatchZones(snap, ch.Zones)
	n.forgetSets(old, snap, ch.Zones)
	n.zonesAt = s
}

// zonePatch returns the zone h of s for the DNS snapshot: its record sets the state's own,
// which the snapshot shares, or copies when the location drains some of their records.
func (n *Node) zonePatch(s *state.State, h *config.Zone, servers zoneServers) location.ZonePatch {
	p := location.ZonePatch{Apex: h.Name, Shard: servers.of(s, h)}
	if n.ovr.Drains(h.Name) {
		z, _ := s.Zone(h.Name)
		z = n.ovr.DrainZone(z)
		p.Zone = &z
		return p
	}
	p.Zone = h
	p.Sets = slices.Collect(s.RecordSets(h.Name))
	return p
}

// forgetSets drops from the history the record sets that consult health checks in old and
// not in now, among the zones named (nil: every zone).
func (n *Node) forgetSets(old, now *location.Snapshot, zones []string) {
	if n.loc.hist == nil {
		return
	}
	for _, set := range location.GoneHealthSets(old, now, zones) {
		n.loc.hist.Forget(set.Name, set.Type)
	}
}

// zoneServers finds the virtual name servers of zones under one configuration's settings.
type zoneServers struct {
	ns   *shard.NameServers
	glue map[int]netip.Addr
}

// nameServers returns the virtual name servers of s's settings, with the addresses this
// location hosts them at as glue.
func (n *Node) nameServers(s *state.State) (zoneServers, error) {
	settings := s.Settings()
	ns, err := shard.NewNameServers(settings.NameServers)
	if err != nil {
		return zoneServers{}, err
	}
	glue := map[int]netip.Addr{}
	for i, a := range n.cfg.NameServers {
		if host, _, err := net.SplitHostPort(a); err == nil {
			if ip, err := netip.ParseAddr(host); err == nil && !ip.IsUnspecified() {
				glue[i] = ip
			}
		}
	}
	return zoneServers{ns: ns, glue: glue}, nil
}

// of returns a zone's virtual name servers (shard.NameServers.Of) with their glue; nil for a
// zone that lists its own, or when the settings have none.
func (zs zoneServers) of(s *state.State, z *config.Zone) []location.NameServer {
	if zs.ns == nil {
		return nil
	}
	servers := zs.ns.Of(z, s.Shard)
	if servers == nil {
		return nil
	}
	return location.ShardNameServers(servers, s.Settings().NameServers.Domain, zs.glue)
}

// zoneShards returns each zone's virtual name servers, by apex.
func (n *Node) zoneShards(s *state.State) (map[string][]location.NameServer, error) {
	servers, err := n.nameServers(s)
	if err != nil {
		return nil, err
	}
	out := map[string][]location.NameServer{}
	for h := range s.ZoneHeads() {
		if nss := servers.of(s, h); nss != nil {
			out[h.Name] = nss
		}
	}
	return out, nil
}

// Zones returns every zone of the configuration as the location serves it, with the error of
// each zone it could not install; nil when the node has no location role.
func (n *Node) Zones() []location.ZoneState {
	if n.dns == nil {
		return nil
	}
	return n.dns.ZoneStates()
}

// zoneFailure says in words what a location serves of a zone it could not install.
func zoneFailure(f location.ZoneState) string {
	serving := fmt.Sprintf("serving its previous version (serial %d)", f.Serial)
	if !f.Served {
		serving = "not serving it"
	}
	return "zone " + f.Zone + " not installed, " + serving + ": " + f.Error
}
