package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
)

// keysRecheck is how often the key keeper looks again without a change of state (this voter
// may have become the leader meanwhile).
const keysRecheck = 2 * time.Second

// rolloverMargin is the time a rollover adds to each wait for the propagation of a change to
// every location and for the difference of their clocks.
const rolloverMargin = 60

// sealer returns the voter's sealer, or nil without a DNSSEC secret.
func (n *Server) sealer() (*dnssec.Sealer, error) {
	if len(n.cfg.DNSSECSecret) == 0 {
		return nil, errors.New("control: this voter has no DNSSEC secret: it cannot generate zone keys")
	}
	return dnssec.NewSealer(n.cfg.DNSSECSecret)
}

// keepZoneKeys generates the first keys of every signed zone that has none, while this voter
// is the leader: keys come from the leader alone, never from the state machine (generation is
// random; the log carries the result). It returns when ctx ends.
func (n *Server) keepZoneKeys(ctx context.Context) {
	defer n.wg.Done()
	var index, scanned uint64
	warned, wasLeader := false, false
	for ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, keysRecheck)
		s := n.fsm.Wait(wctx, index)
		cancel()
		index = s.Index
		leader := n.IsLeader()
		if !leader || (wasLeader && scanned == s.Index) {
			// Nothing new to look at: not the leader, or the state it already scanned.
			wasLeader = leader
			continue
		}
		wasLeader, scanned = true, s.Index
		for z := range s.ZoneHeads() {
			if !z.Signed() {
				continue
			}
			if _, ok := s.keys.Get(CanonicalZone(z.Name)); ok {
				continue
			}
			sealer, err := n.sealer()
			if err != nil {
				if !warned {
					n.log.Error("control: signed zones wait for keys", "zone", z.Name, "err", err)
					warned = true
				}
				break
			}
			if err := n.createZoneKeys(z, sealer); err != nil && !errors.Is(err, ErrConflict) {
				n.log.Warn("control: generating a signed zone's first keys", "zone", z.Name, "err", err)
				scanned = 0 // look again at the next recheck
			}
		}
	}
}

// createZoneKeys generates and commits a zone's first keys.
func (n *Server) createZoneKeys(z *config.Zone, sealer *dnssec.Sealer) error {
	zk, err := dnssec.InitialKeys(CanonicalZone(z.Name), z.DNSSEC.Keys, sealer, time.Now().Unix())
	if err != nil {
		return err
	}
	if _, err := n.Apply(&Command{Op: OpPutZoneKeys, Create: true, ZoneKeys: zk}); err != nil {
		return err
	}
	n.log.Info("control: generated a signed zone's first keys", "zone", zk.Zone, "scheme", z.DNSSEC.Keys)
	return nil
}

// RolloverRequest asks for a key rollover of one zone.
type RolloverRequest struct {
	// Role is the key rolled: csk, ksk or zsk.
	Role dnssec.Role `json:"role"`
	// Finish ends a KSK or CSK rollover: the old key stops signing and is removed later.
	Finish bool `json:"finish,omitempty"`
}

// Rollover starts (or, with Finish, ends) a rollover of a zone's keys, timed by its TTLs
// (dnssec.Rollover), and commits the result. Only the leader can: elsewhere ErrNotLeader.
func (n *Server) Rollover(zone string, req RolloverRequest, now time.Time) (uint64, error) {
	if !n.IsLeader() {
		return 0, ErrNotLeader
	}
	s := n.fsm.State()
	z, ok := s.ZoneHead(zone)
	if !ok {
		return 0, fmt.Errorf("control: zone %q: %w", zone, ErrNotFound)
	}
	zk, ok := s.ZoneKeys(zone)
	if !ok {
		return 0, fmt.Errorf("control: zone %q has no DNSSEC keys: %w", zone, ErrNotFound)
	}
	t := dnssec.Timing{DNSKEYTTL: dnskeyTTL(z), MaxTTL: s.maxTTL(z), Margin: rolloverMargin}
	var next *dnssec.ZoneKeys
	var err error
	if req.Finish {
		next, err = dnssec.FinishRollover(zk, req.Role, now.Unix(), t)
	} else {
		var sealer *dnssec.Sealer
		if sealer, err = n.sealer(); err == nil {
			next, err = dnssec.Rollover(zk, req.Role, sealer, now.Unix(), t)
		}
	}
	if err != nil {
		// Not a document problem, but reported as one: 422 with the reason in errors.
		return 0, &ValidationError{Errors: config.Errors{{Path: "role", Message: err.Error()}}}
	}
	return n.Apply(&Command{Op: OpPutZoneKeys, ZoneKeys: next})
}

// dnskeyTTL returns the TTL of a zone's DNSKEY record set.
func dnskeyTTL(z *config.Zone) uint32 {
	if z.DNSSEC != nil && z.DNSSEC.DNSKEYTTL > 0 {
		return z.DNSSEC.DNSKEYTTL
	}
	return dnssec.DefaultDNSKEYTTL
}

// maxTTL returns the largest TTL a zone's signed record sets can have: of its record sets,
// its SOA, its negative answers and its DNSKEY set.
func (s *State) maxTTL(z *config.Zone) uint32 {
	m := max(dnskeyTTL(z), z.SOA.TTL, z.SOA.Minimum, z.TTL, 172800) // NS records and glue: 2 days
	for rs := range s.RecordSets(z.Name) {
		m = max(m, rs.EffectiveTTL(z.TTL))
	}
	return m
}
