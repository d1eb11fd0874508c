package gossip

import (
	"fmt"
	"strings"
)

// Roles is the set of roles a node runs.
type Roles uint8

// The roles a node may run, in any combination.
const (
	// RoleChecker probes checks and publishes reports.
	RoleChecker Roles = 1 << iota
	// RoleLocation answers DNS from the reports it hears.
	RoleLocation
	// RoleControl is a control-plane voter.
	RoleControl
	rolesAll = RoleChecker | RoleLocation | RoleControl
)

// Has reports whether every role of q is in r.
func (r Roles) Has(q Roles) bool { return r&q == q }

// String returns the roles joined by "+", e.g. "checker+location".
func (r Roles) String() string {
	var parts []string
	for _, x := range []struct {
		role Roles
		name string
	}{{RoleChecker, "checker"}, {RoleLocation, "location"}, {RoleControl, "control"}} {
		if r.Has(x.role) {
			parts = append(parts, x.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// Member is a node of the pool, as its metadata describes it.
type Member struct {
	// ID is the node's id, its memberlist name.
	ID string
	// Region is the node's region.
	Region string
	// Roles are the node's roles.
	Roles Roles
	// Version is the node's software version.
	Version string
	// Addr is the node's gossip address, host:port.
	Addr string
	// HTTP is the address, host:port, at which the node serves its status API, as it
	// advertises it ("" when it does not say; see Config.HTTPAddr).
	HTTP string
	// Leaving is set when the member announced that it is leaving the pool for good, just
	// before it left (memberlist does not tell a leave from a death by itself).
	Leaving bool
}

// metaLeaving is the flag bit of the roles byte that says the member is leaving.
const metaLeaving = 0x80

// metaVersion is the first byte of encoded node metadata.
const metaVersion = 1

// maxMetaField bounds the region, version and HTTP address strings in node metadata.
const maxMetaField = 64

// The metadata's fields after the flags, each a length byte and its bytes: id, region,
// version, then the optional HTTP address (written only when set, so that the metadata of a
// node that does not advertise one is what nodes of earlier builds read). Fields after those
// known are skipped, so that a later build may add more.

// encodeMeta encodes a member's metadata (not its address, which memberlist carries).
func encodeMeta(m Member) []byte {
	flags := byte(m.Roles)
	if m.Leaving {
		flags |= metaLeaving
	}
	b := []byte{metaVersion, flags}
	fields := []string{m.ID, m.Region, m.Version}
	if m.HTTP != "" {
		fields = append(fields, m.HTTP)
	}
	for _, s := range fields {
		b = append(b, byte(len(s)))
		b = append(b, s...)
	}
	return b
}

// decodeMeta parses node metadata.
func decodeMeta(b []byte) (Member, error) {
	if len(b) < 2 || b[0] != metaVersion {
		return Member{}, fmt.Errorf("gossip: node metadata: %w", errMalformed)
	}
	m := Member{Roles: Roles(b[1] &^ metaLeaving), Leaving: b[1]&metaLeaving != 0}
	if m.Roles&^rolesAll != 0 {
		return Member{}, fmt.Errorf("gossip: node metadata roles %#x: %w", b[1], errMalformed)
	}
	b = b[2:]
	fields := []*string{&m.ID, &m.Region, &m.Version, &m.HTTP}
	for i := 0; len(b) > 0 || i < 3; i++ {
		if len(b) < 1 || int(b[0]) > len(b)-1 {
			return Member{}, fmt.Errorf("gossip: node metadata: %w", errMalformed)
		}
		if i < len(fields) {
			*fields[i] = string(b[1 : 1+b[0]])
		}
		b = b[1+b[0]:]
	}
	return m, nil
}
