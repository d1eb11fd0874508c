package dnssec

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// Timing is what a rollover waits for, in seconds: the TTL of the DNSKEY record set, the
// largest TTL of any signed record set of the zone, and a margin for propagation to every
// location and for their clocks.
type Timing struct {
	DNSKEYTTL uint32
	MaxTTL    uint32
	Margin    int64
}

// InitialKeys generates a zone's first keys at now by scheme: one CSK (combined) or a KSK
// and a ZSK (split), published and signing at once.
func InitialKeys(apex, scheme string, sealer *Sealer, now int64) (*ZoneKeys, error) {
	apex = dns.Fqdn(strings.ToLower(apex))
	roles := []Role{RoleCSK}
	switch scheme {
	case SchemeCombined, "":
	case SchemeSplit:
		roles = []Role{RoleKSK, RoleZSK}
	default:
		return nil, fmt.Errorf("dnssec: unknown key scheme %q (combined or split)", scheme)
	}
	zk := &ZoneKeys{Zone: apex}
	for _, r := range roles {
		k, err := Generate(apex, r, sealer, now, now, now, zk.Keys)
		if err != nil {
			return nil, err
		}
		zk.Keys = append(zk.Keys, k)
	}
	return zk, nil
}

// Rollover returns zk with a new key of role replacing the current one, timed so that a
// validating resolver never meets a signature whose key it does not hold:
//
//   - a ZSK by pre-publication (RFC 6781 §4.1.1.1): the new key is published now and signs
//     from DNSKEYTTL+Margin on, when every cached DNSKEY record set holds it; the old key
//     stops signing then and is removed MaxTTL+Margin later, when every signature it made
//     has expired from caches;
//   - a KSK or CSK by double signature (RFC 6781 §4.1.2): the new key is published and signs
//     now, beside the old one, which keeps signing until FinishRollover (call it once the
//     parent serves the new key's DS and the old DS has expired from caches).
//
// Keys already removed at now are dropped. A rollover of a role is refused while one is in
// progress.
func Rollover(zk *ZoneKeys, role Role, sealer *Sealer, now int64, t Timing) (*ZoneKeys, error) {
	next := prune(zk, now)
	var current []int
	for i := range next.Keys {
		k := &next.Keys[i]
		if k.Role != role || !k.Published(now) {
			continue
		}
		if now < k.Activate || k.Retire != 0 {
			return nil, fmt.Errorf("dnssec: zone %s: a %s rollover is in progress (key %d)", zk.Zone, role, k.Tag)
		}
		current = append(current, i)
	}
	if len(current) == 0 {
		return nil, fmt.Errorf("dnssec: zone %s has no %s to roll over", zk.Zone, role)
	}
	if len(current) > 1 {
		return nil, fmt.Errorf("dnssec: zone %s: a %s rollover is in progress (finish it first)", zk.Zone, role)
	}
	activate := now
	if role == RoleZSK {
		activate = now + int64(t.DNSKEYTTL) + t.Margin
	}
	k, err := Generate(zk.Zone, role, sealer, now, now, activate, next.Keys)
	if err != nil {
		return nil, err
	}
	if role == RoleZSK {
		old := &next.Keys[current[0]]
		old.Retire = activate
		old.Remove = activate + int64(t.MaxTTL) + t.Margin
	}
	next.Keys = append(next.Keys, k)
	return next, nil
}

// FinishRollover ends a KSK or CSK rollover: the older of the two signing keys of role stops
// signing now and is removed once every DNSKEY record set and signature it made has expired
// from caches.
func FinishRollover(zk *ZoneKeys, role Role, now int64, t Timing) (*ZoneKeys, error) {
	if role == RoleZSK {
		return nil, errors.New("dnssec: a ZSK rollover finishes by itself")
	}
	next := prune(zk, now)
	var signing []int
	for i := range next.Keys {
		if next.Keys[i].Role == role && next.Keys[i].Signing(now) && next.Keys[i].Retire == 0 {
			signing = append(signing, i)
		}
	}
	if len(signing) < 2 {
		return nil, fmt.Errorf("dnssec: zone %s: no %s rollover in progress", zk.Zone, role)
	}
	old := &next.Keys[signing[0]]
	old.Retire = now
	old.Remove = now + int64(max(t.DNSKEYTTL, t.MaxTTL)) + t.Margin
	return next, nil
}

// prune returns a copy of zk without the keys removed at now.
func prune(zk *ZoneKeys, now int64) *ZoneKeys {
	next := &ZoneKeys{Zone: zk.Zone, Keys: slices.Clone(zk.Keys)}
	next.Keys = slices.DeleteFunc(next.Keys, func(k Key) bool { return k.Remove != 0 && k.Remove <= now })
	return next
}
