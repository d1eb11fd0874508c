package state

import (
	"bufio"
	"errors"
	"fmt"
	"slices"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
)

// ZoneKeys returns the DNSSEC keys of a zone (named as in ZoneHead), private halves sealed;
// the caller must not change them.
func (s *State) ZoneKeys(zone string) (*dnssec.ZoneKeys, bool) {
	return s.keys.Get(CanonicalZone(zone))
}

// SetZoneKeys stores (zk not nil) or drops a zone's keys. A change counts as a change of the
// zone: its serial moves, and data-plane nodes install it again with its keys.
func (e *Edit) SetZoneKeys(apex string, zk *dnssec.ZoneKeys) {
	if zk == nil {
		if _, ok := e.Next.keys.Get(apex); ok {
			e.Next.keys, _ = e.Next.keys.Delete(e.tok, apex)
			e.zones[apex] = true
		}
		return
	}
	e.Next.keys = e.Next.keys.Set(e.tok, apex, zk)
	e.zones[apex] = true
}

// putZoneKeys applies a put_zone_keys command: keys for an existing zone; with Create, only
// when the zone has none yet (so that two voters that both generated first keys do not
// replace each other's).
func (e *Edit) putZoneKeys(c *Command) error {
	zk := c.ZoneKeys
	if zk == nil || len(zk.Keys) == 0 {
		return errors.New("control: put_zone_keys needs keys")
	}
	apex := CanonicalZone(zk.Zone)
	if _, ok := e.Next.zones.Get(apex); !ok {
		return fmt.Errorf("control: zone %q: %w", zk.Zone, ErrNotFound)
	}
	if _, ok := e.Next.keys.Get(apex); ok && c.Create {
		return fmt.Errorf("control: keys of zone %q: %w", zk.Zone, ErrConflict)
	}
	for _, k := range zk.Keys {
		if len(k.Sealed) == 0 || k.PublicKey == "" {
			return fmt.Errorf("control: zone %q: key %d without its sealed private key or public key", zk.Zone, k.Tag)
		}
	}
	stored := *zk
	stored.Zone = apex
	e.SetZoneKeys(apex, &stored)
	return nil
}

// WithoutSealed returns s as it is written for a reader that neither seals nor signs (a
// checker's certificate): the zones' keys without their sealed private halves, the TSIG keys
// without their sealed secrets.
func (s *State) WithoutSealed() *State {
	c := *s
	c.hideSealed = true
	return &c
}

// publicOnly returns a copy of zk without the sealed private halves of its keys.
func publicOnly(zk *dnssec.ZoneKeys) *dnssec.ZoneKeys {
	c := &dnssec.ZoneKeys{Zone: zk.Zone, Keys: slices.Clone(zk.Keys)}
	for i := range c.Keys {
		c.Keys[i].Sealed = nil
	}
	return c
}

// WithoutSealed returns d for a reader that neither seals nor signs: its zones' keys without
// their sealed private halves, its TSIG keys without their sealed secrets (d itself is not
// changed).
func (d *Delta) WithoutSealed() *Delta {
	if len(d.ZoneKeys) == 0 && d.TSIGKeys == nil {
		return d
	}
	c := *d
	if d.TSIGKeys != nil {
		c.TSIGKeys = &TSIGKeyList{Items: make([]*StoredTSIGKey, 0, len(d.TSIGKeys.Items))}
		for _, k := range d.TSIGKeys.Items {
			c.TSIGKeys.Items = append(c.TSIGKeys.Items, &StoredTSIGKey{Name: k.Name, Algorithm: k.Algorithm})
		}
	}
	if len(d.ZoneKeys) == 0 {
		return &c
	}
	c.ZoneKeys = make(map[string]*dnssec.ZoneKeys, len(d.ZoneKeys))
	for apex, zk := range d.ZoneKeys {
		c.ZoneKeys[apex] = publicOnly(zk)
	}
	return &c
}

// writeZoneKeys writes the "zone_keys" member of the state's JSON: every zone's keys, sealed
// (without the sealed halves when s.hideSealed).
func (s *State) writeZoneKeys(w *bufio.Writer) error {
	w.WriteString(`,"zone_keys":{`)
	first := true
	for apex, zk := range s.keys.All("") {
		if !first {
			w.WriteByte(',')
		}
		first = false
		if s.hideSealed {
			zk = publicOnly(zk)
		}
		if err := writeKV(w, apex, zk); err != nil {
			return err
		}
	}
	_, err := w.WriteString("}")
	return err
}

// readZoneKeys reads the "zone_keys" member into the edit.
func (r *stateReader) readZoneKeys() error {
	var keys map[string]*dnssec.ZoneKeys
	if err := r.dec.Decode(&keys); err != nil {
		return err
	}
	for apex, zk := range keys {
		if zk != nil {
			r.e.SetZoneKeys(CanonicalZone(apex), zk)
		}
	}
	return nil
}

// deltaZoneKeys adds to d the keys of a zone whose head it carries.
func (s *State) deltaZoneKeys(d *Delta, apex string) {
	if zk, ok := s.keys.Get(apex); ok {
		if d.ZoneKeys == nil {
			d.ZoneKeys = map[string]*dnssec.ZoneKeys{}
		}
		d.ZoneKeys[apex] = zk
	}
}

// RolloverTiming returns what a rollover of zone z waits for.
func (s *State) RolloverTiming(z *config.Zone) dnssec.Timing {
	return dnssec.Timing{DNSKEYTTL: DNSKEYTTL(z), MaxTTL: s.maxTTL(z), Margin: RolloverMargin}
}

// DNSKEYTTL returns the TTL of a zone's DNSKEY record set.
func DNSKEYTTL(z *config.Zone) uint32 {
	if z.DNSSEC != nil && z.DNSSEC.DNSKEYTTL > 0 {
		return z.DNSSEC.DNSKEYTTL
	}
	return dnssec.DefaultDNSKEYTTL
}

// maxTTL returns the largest TTL a zone's signed record sets can have: of its record sets,
// its SOA, its negative answers and its DNSKEY set; at least two days, the TTL of the apex
// NS records and glue the locations serve, which a KSK or CSK rollover's finish also takes as
// the bound of the parent's DS TTL (the common one is a day).
func (s *State) maxTTL(z *config.Zone) uint32 {
	m := max(DNSKEYTTL(z), z.SOA.TTL, z.SOA.Minimum, z.TTL, 172800) // NS records and glue: 2 days
	for rs := range s.RecordSets(z.Name) {
		m = max(m, rs.EffectiveTTL(z.TTL))
	}
	return m
}

// RolloverMargin is the time a rollover adds to each wait for the propagation of a change to
// every location and for the difference of their clocks.
const RolloverMargin = 60
