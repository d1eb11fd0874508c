package node

import (
	"maps"
	"reflect"
	"strings"

	"github.com/miekg/dns"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/location"
)

// installTransfers gives the DNS server the zones of s that this location transfers out: those
// whose transfers section names this node, or its region (config.Transfers.Feeds), with their
// allowed networks and secondaries, and the TSIG keys this node holds (Config.TSIGKeys). A
// change of some zones looks at those zones only. The caller holds n.zonesMu.
func (n *Node) installTransfers(s *control.State, ch control.Changes) {
	next := maps.Clone(n.transfers)
	if ch.Full || ch.Settings || next == nil {
		next = map[string]location.ZoneTransfer{}
		for h := range s.ZoneHeads() {
			n.zoneTransfer(next, h.Name, h)
		}
	} else {
		for _, apex := range ch.Zones {
			h, _ := s.ZoneHead(apex)
			n.zoneTransfer(next, apex, h)
		}
	}
	if n.transfers != nil && reflect.DeepEqual(next, n.transfers) {
		return
	}
	if err := n.dns.SetTransfers(next, n.cfg.TSIGKeys); err != nil {
		n.log.Error("node: zone transfers keep their previous settings", "err", err)
		return
	}
	n.transfers = next
}

// zoneTransfer sets in m what zone h (nil: removed) says about its transfers from this
// location, under apex.
func (n *Node) zoneTransfer(m map[string]location.ZoneTransfer, apex string, h *config.Zone) {
	apex = dns.Fqdn(strings.ToLower(apex))
	if h == nil || !h.Transfers.Feeds(n.cfg.ID, n.cfg.Region) {
		delete(m, apex)
		return
	}
	t := h.Transfers
	zt := location.ZoneTransfer{Allow: t.AllowPrefixes()}
	for _, sec := range t.Secondaries {
		ap, err := sec.AddrPort()
		if err != nil {
			continue // the configuration refuses it (config.Transfers)
		}
		zt.Secondaries = append(zt.Secondaries, location.Secondary{Addr: ap, Key: config.TSIGKeyName(sec.Key)})
	}
	m[apex] = zt
}
