package agent

import (
	"fmt"
	"log/slog"

	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/dnssec"
)

// signers holds the location's DNSSEC signers by apex, each with the keys and DNSKEY TTL it
// was made from, so that a zone whose keys did not change keeps its signer and its cache.
type signers struct {
	sealer *dnssec.Sealer
	tried  bool
	byZone map[string]signerEntry
	// unsigned holds, by apex, why a zone the control plane signs has no signer here.
	unsigned map[string]string
}

type signerEntry struct {
	keys *dnssec.ZoneKeys
	ttl  uint32
	sg   *dnssec.Signer
}

// dnssecSecret returns the secret that seals zones' DNSSEC keys: the configured one, else,
// only with InsecureDNSSECSecretFromGossipKey, the first gossip key (of Keys, then of the
// keyring file); nil when there is none. A node without the control or location role never
// has one: it neither seals nor signs.
func dnssecSecret(cfg Config, log *slog.Logger) []byte {
	if !cfg.Roles.Has(RoleControl) && !cfg.Roles.Has(RoleLocation) {
		return nil
	}
	if len(cfg.DNSSECSecret) > 0 {
		return cfg.DNSSECSecret
	}
	if !cfg.InsecureDNSSECSecretFromGossipKey {
		return nil
	}
	if len(cfg.Gossip.Keys) > 0 {
		return cfg.Gossip.Keys[0]
	}
	if cfg.Gossip.KeyringFile != "" {
		keys, err := readKeyring(cfg.Gossip.KeyringFile)
		if err != nil {
			log.Warn("node: no DNSSEC secret from the keyring", "err", err)
			return nil
		}
		return keys[0]
	}
	return nil
}

// validateDNSSEC reports the problems of the DNSSEC secrets: too short, or given to a node
// that neither seals nor signs (a checker-only node must not hold what opens every zone's
// signing keys).
func (c Config) validateDNSSEC(bad func(string, ...any)) {
	if c.DNSSECSignBudget < 0 {
		bad("dnssec sign budget %g: want new signatures a second, or 0 for the default measured from the CPU", c.DNSSECSignBudget)
	}
	if len(c.DNSSECSecret) == 0 && len(c.DNSSECOlderSecrets) == 0 && !c.InsecureDNSSECSecretFromGossipKey {
		return
	}
	if !c.Roles.Has(RoleControl) && !c.Roles.Has(RoleLocation) {
		bad("dnssec secret: only voters (control) and locations seal or open zones' signing keys; do not give it to this node (roles %s)", c.Roles)
		return
	}
	if n := len(c.DNSSECSecret); n > 0 && n < dnssec.MinSecretLen {
		bad("dnssec secret of %d bytes: want at least %d (vigil keyring generate makes one)", n, dnssec.MinSecretLen)
	}
	if len(c.DNSSECSecret) > 0 && c.InsecureDNSSECSecretFromGossipKey {
		bad("dnssec secret and the insecure gossip-key fallback are exclusive: keep the secret")
	}
	if len(c.DNSSECOlderSecrets) > 0 && len(c.DNSSECSecret) == 0 {
		bad("older dnssec secrets without a dnssec secret: set the current one too")
	}
	for i, o := range c.DNSSECOlderSecrets {
		if len(o) < dnssec.MinSecretLen {
			bad("older dnssec secret %d of %d bytes: want at least %d", i+1, len(o), dnssec.MinSecretLen)
		}
	}
}

// warnDNSSEC logs, at start, what a voter or location without its own DNSSEC secret cannot
// do, and loudly when it seals with the gossip key, which every checker holds.
func warnDNSSEC(cfg Config, log *slog.Logger) {
	if !cfg.Roles.Has(RoleControl) && !cfg.Roles.Has(RoleLocation) {
		return
	}
	switch {
	case len(cfg.DNSSECSecret) > 0:
	case cfg.InsecureDNSSECSecretFromGossipKey:
		log.Error("node: INSECURE: DNSSEC signing keys are sealed with the gossip key, which every checker holds; " +
			"checkers and any holder of the gossip key and a read credential can unseal every signed zone's private keys. " +
			"Give voters and locations only a -dnssec-secret-file (vigil keyring generate), list the gossip key in it as an " +
			"older secret until a rollover of every key, and drop -insecure-dnssec-secret-from-gossip-key")
	case cfg.Roles.Has(RoleControl) && cfg.Roles.Has(RoleLocation):
		log.Warn("node: no DNSSEC secret: this voter refuses to enable signing on a zone, and this location serves signed zones unsigned (not ready); give voters and locations -dnssec-secret-file")
	case cfg.Roles.Has(RoleControl):
		log.Warn("node: no DNSSEC secret: this voter refuses to enable signing on a zone; give voters and locations -dnssec-secret-file")
	default:
		log.Warn("node: no DNSSEC secret: signed zones are served unsigned by this location and it reports them degraded; give voters and locations -dnssec-secret-file")
	}
}

// installSigners brings the DNS server's signers to s: for each zone that ch names (every
// zone when ch is full), a signer when the zone is signed and the control plane holds its
// keys, none otherwise. The caller holds zonesMu.
func (n *Node) installSigners(s *state.State, ch state.Changes) {
	ss := &n.signers
	n.sealer()
	zones := ch.Zones
	if ch.Full || ch.Settings || ss.byZone == nil {
		zones = nil
		for h := range s.ZoneHeads() {
			zones = append(zones, state.CanonicalZone(h.Name))
		}
		for apex := range ss.byZone {
			if _, ok := s.ZoneHead(apex); !ok {
				zones = append(zones, apex)
			}
		}
		if ss.byZone == nil {
			ss.byZone = map[string]signerEntry{}
		}
	}
	if ss.unsigned == nil {
		ss.unsigned = map[string]string{}
	}
	changed, unsignedChanged := false, false
	for _, apex := range zones {
		apex = state.CanonicalZone(apex)
		next, why := n.signerOf(s, apex, ss.byZone[apex])
		if ss.unsigned[apex] != why {
			unsignedChanged = true
			if why == "" {
				delete(ss.unsigned, apex)
			} else {
				ss.unsigned[apex] = why
			}
		}
		if next != ss.byZone[apex] {
			changed = true
			if next.sg == nil {
				delete(ss.byZone, apex)
			} else {
				ss.byZone[apex] = next
			}
		}
	}
	if unsignedChanged {
		n.dns.SetUnsigned(ss.unsigned)
	}
	if !changed {
		return
	}
	m := make(map[string]*dnssec.Signer, len(ss.byZone))
	for apex, e := range ss.byZone {
		m[apex] = e.sg
	}
	n.dns.SetSigners(m)
}

// signerOf returns the signer zone apex needs under s: old when its keys and TTL are the
// same, a new one when they changed, none when the zone is not signed or has no keys yet.
// why says, for a signed zone left without a signer, why it cannot be signed here.
func (n *Node) signerOf(s *state.State, apex string, old signerEntry) (_ signerEntry, why string) {
	h, ok := s.ZoneHead(apex)
	if !ok || !h.Signed() {
		return signerEntry{}, ""
	}
	zk, ok := s.ZoneKeys(apex)
	if !ok {
		return signerEntry{}, "the control plane holds no keys for the zone yet"
	}
	if n.signers.sealer == nil {
		return signerEntry{}, "this location has no DNSSEC secret (give it -dnssec-secret-file, the file the voters seal the zone's keys with)"
	}
	ttl := h.DNSSEC.DNSKEYTTL
	if ttl == 0 {
		ttl = dnssec.DefaultDNSKEYTTL
	}
	if old.keys == zk && old.ttl == ttl {
		return old, ""
	}
	sg, err := dnssec.NewSigner(zk, n.signers.sealer, dnssec.SignerConfig{DNSKEYTTL: ttl})
	if err != nil {
		return signerEntry{}, fmt.Sprintf("the zone's keys do not open with this location's DNSSEC secret (give it the voters' -dnssec-secret-file): %v", err)
	}
	n.log.Info("node: zone signed", "zone", apex, "keys", len(zk.Keys))
	return signerEntry{keys: zk, ttl: ttl, sg: sg}, ""
}
