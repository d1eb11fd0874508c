package agent

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/location"
)

// xfrKeys are the TSIG keys of a location's transfers: its file's (Config.TSIGKeys) and the
// control plane's it opens.
type xfrKeys struct {
	// at is the state whose control-plane keys were opened; nil before the first install.
	at *state.State
	// keys are the keys given to the DNS server, in the order of their names.
	keys []location.TSIGKey
	// unopened says, by key name, why a control-plane key does not open here.
	unopened map[string]string
	// warned: the missing seal secret was logged.
	warned bool
}

// installTransfers gives the DNS server the zones of s that this location transfers out: those
// whose transfers section names this node, or its region (config.Transfers.Feeds), with their
// allowed networks and secondaries, and the TSIG keys (transferKeys). A secondary whose key
// this location lacks is left out of its zone, which readiness reports degraded. A change of
// some zones looks at those zones only. The caller holds n.zonesMu.
func (n *Node) installTransfers(s *state.State, ch state.Changes) {
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
	keysChanged := n.transferKeys(s, ch)
	if !keysChanged && n.transfers != nil && reflect.DeepEqual(next, n.transfers) {
		return
	}
	held := map[string]bool{}
	for _, k := range n.xfrKeys.keys {
		held[config.TSIGKeyName(k.Name)] = true
	}
	given := make(map[string]location.ZoneTransfer, len(next))
	degraded := map[string]string{}
	for apex, zt := range next {
		var secs []location.Secondary
		for _, sec := range zt.Secondaries {
			if held[sec.Key] {
				secs = append(secs, sec)
				continue
			}
			why, ok := n.xfrKeys.unopened[sec.Key]
			if !ok {
				why = "no key of that name in -tsig-keys-file or the control plane (vigil tsig put)"
			}
			if degraded[apex] != "" {
				degraded[apex] += "; "
			}
			degraded[apex] += fmt.Sprintf("secondary %s: TSIG key %s: %s", sec.Addr, sec.Key, why)
		}
		given[apex] = location.ZoneTransfer{Allow: zt.Allow, Secondaries: secs}
	}
	if err := n.dns.SetTransfers(given, n.xfrKeys.keys); err != nil {
		n.log.Error("node: zone transfers keep their previous settings", "err", err)
		return
	}
	n.transfers = next
	if prev := n.xfrDegraded.Load(); prev == nil || !maps.Equal(*prev, degraded) {
		for _, apex := range slices.Sorted(maps.Keys(degraded)) {
			n.log.Warn("node: a zone's secondary lacks its TSIG key here: it cannot transfer the zone or be notified", "zone", apex, "reason", degraded[apex])
		}
	}
	n.xfrDegraded.Store(&degraded)
}

// transferKeys brings n.xfrKeys to s, when the control plane's keys may have changed: the
// file's keys, and the control plane's opened with the DNSSEC seal secret; a name in both is
// the file's (logged). It reports whether the keys changed. The caller holds n.zonesMu.
func (n *Node) transferKeys(s *state.State, ch state.Changes) bool {
	xk := &n.xfrKeys
	if xk.at != nil && !ch.Full && !ch.TSIGKeys {
		return false
	}
	xk.at = s
	byName := map[string]location.TSIGKey{}
	for _, k := range n.cfg.TSIGKeys {
		byName[config.TSIGKeyName(k.Name)] = k
	}
	unopened := map[string]string{}
	sealer := n.sealer()
	for k := range s.TSIGKeys() {
		if _, ok := byName[k.Name]; ok {
			n.log.Info("node: a TSIG key is both in -tsig-keys-file and in the control plane: the file's is used", "key", k.Name)
			continue
		}
		if sealer == nil {
			unopened[k.Name] = "the control plane holds it sealed and this location has no DNSSEC secret (give it the voters' -dnssec-secret-file)"
			if !xk.warned {
				xk.warned = true
				n.log.Warn("node: no DNSSEC secret: the control plane's TSIG keys do not open here, and zones whose secondaries use them are not transferred to those secondaries; give this location the voters' -dnssec-secret-file", "key", k.Name)
			}
			continue
		}
		secret, err := sealer.OpenTSIG(k.Name, k.Sealed)
		if err != nil {
			unopened[k.Name] = err.Error()
			continue
		}
		byName[k.Name] = location.TSIGKey{Name: k.Name, Algorithm: k.Algorithm, Secret: string(secret)}
	}
	keys := make([]location.TSIGKey, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		keys = append(keys, byName[name])
	}
	if err := location.CheckTSIGKeys(keys); err != nil {
		// A control-plane key the voter checked never fails here; drop what does, keep the rest.
		n.log.Error("node: TSIG keys", "err", err)
		keys = slices.DeleteFunc(keys, func(k location.TSIGKey) bool {
			return location.CheckTSIGKeys([]location.TSIGKey{k}) != nil
		})
	}
	changed := !reflect.DeepEqual(keys, xk.keys) || !maps.Equal(unopened, xk.unopened)
	xk.keys, xk.unopened = keys, unopened
	return changed
}

// sealer returns the location's DNSSEC sealer, made on first use; nil without a secret.
// The caller holds n.zonesMu.
func (n *Node) sealer() *dnssec.Sealer {
	ss := &n.signers
	if !ss.tried {
		ss.tried = true
		if secret := dnssecSecret(n.cfg, n.log); secret != nil {
			sealer, err := dnssec.NewSealer(secret, n.cfg.DNSSECOlderSecrets...)
			if err != nil {
				n.log.Error("node: DNSSEC secret", "err", err)
			}
			ss.sealer = sealer
		}
	}
	return ss.sealer
}

// transferProblems says, by apex, why a zone this location feeds lacks a secondary's key.
func (n *Node) transferProblems() map[string]string {
	if m := n.xfrDegraded.Load(); m != nil {
		return *m
	}
	return nil
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
