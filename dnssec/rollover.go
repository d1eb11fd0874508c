package dnssec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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

// finishWait is how long a KSK or CSK rollover waits between its start and its finish: the
// DNSKEY TTL (until every cached DNSKEY record set holds the new key, so that the parent may
// serve its DS), then the largest TTL of the zone (which the caller makes at least the
// parent's DS TTL: until the old DS has expired from caches once the parent changed it),
// and the margin.
func (t Timing) finishWait() int64 { return int64(t.DNSKEYTTL) + int64(t.MaxTTL) + t.Margin }

// TooEarlyError is a rollover finish asked before the TTLs it waits for have passed.
type TooEarlyError struct {
	// Zone is the apex; Role the key rolled.
	Zone string
	Role Role
	// Started is when the rollover started (the new key's Publish), Earliest when it may be
	// finished, Now when the finish was asked (Unix seconds).
	Started, Earliest, Now int64
}

// Error says when the rollover may be finished.
func (e *TooEarlyError) Error() string {
	return fmt.Sprintf("dnssec: zone %s: the %s rollover started at %s may be finished from %s (in %s): until then caches may hold a DNSKEY set without the new key or the old DS (DNSKEY TTL + the zone's largest TTL + margin); have the parent serve the new DS, and finish then, or force it knowing resolvers may fail to validate",
		e.Zone, e.Role, utc(e.Started), utc(e.Earliest), time.Duration(e.Earliest-e.Now)*time.Second)
}

func utc(unix int64) string { return time.Unix(unix, 0).UTC().Format(time.RFC3339) }

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
//     parent serves the new key's DS and the old DS has expired from caches); the new key's
//     FinishAfter is the earliest time FinishRollover accepts, by t.
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
	} else {
		k.FinishAfter = now + t.finishWait()
	}
	next.Keys = append(next.Keys, k)
	return next, nil
}

// FinishRollover ends a KSK or CSK rollover: the older of the two signing keys of role stops
// signing now and is removed once every DNSKEY record set and signature it made has expired
// from caches. Before the rollover's earliest finish (the newer key's FinishAfter, and its
// Publish plus the wait by t, whichever is later: t may have grown since the start) it
// returns a *TooEarlyError, unless force.
func FinishRollover(zk *ZoneKeys, role Role, now int64, t Timing, force bool) (*ZoneKeys, error) {
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
	if !force {
		if started, earliest := FinishTime(next, role, t); now < earliest {
			return nil, &TooEarlyError{Zone: zk.Zone, Role: role, Started: started, Earliest: earliest, Now: now}
		}
	}
	old := &next.Keys[signing[0]]
	old.Retire = now
	old.Remove = now + int64(max(t.DNSKEYTTL, t.MaxTTL)) + t.Margin
	return next, nil
}

// FinishTime returns when the KSK or CSK rollover of role in progress in zk started and the
// earliest time FinishRollover ends it without force; 0, 0 when none is in progress. The
// rollover's new keys are the signing keys of role after the oldest.
func FinishTime(zk *ZoneKeys, role Role, t Timing) (started, earliest int64) {
	first := true
	for _, k := range zk.Keys {
		if k.Role != role || k.Retire != 0 || k.Remove != 0 {
			continue
		}
		if first {
			first = false // the key the rollover replaces
			continue
		}
		started = max(started, k.Publish)
		earliest = max(earliest, k.FinishAfter, k.Publish+t.finishWait())
	}
	return started, earliest
}

// prune returns a copy of zk without the keys removed at now.
func prune(zk *ZoneKeys, now int64) *ZoneKeys {
	next := &ZoneKeys{Zone: zk.Zone, Keys: slices.Clone(zk.Keys)}
	next.Keys = slices.DeleteFunc(next.Keys, func(k Key) bool { return k.Remove != 0 && k.Remove <= now })
	return next
}
