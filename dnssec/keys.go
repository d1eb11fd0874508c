package dnssec

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/dns"
)

// Role is what a key signs.
type Role string

// The roles of a key.
const (
	// RoleCSK is a combined signing key: it signs every record set (flags 257).
	RoleCSK Role = "csk"
	// RoleKSK is a key-signing key: it signs the DNSKEY record set only (flags 257).
	RoleKSK Role = "ksk"
	// RoleZSK is a zone-signing key: it signs every record set but DNSKEY (flags 256).
	RoleZSK Role = "zsk"
)

// Schemes of a zone's keys, as the configuration names them.
const (
	// SchemeCombined is one combined signing key (CSK).
	SchemeCombined = "combined"
	// SchemeSplit is a key-signing key and a zone-signing key.
	SchemeSplit = "split"
)

// Algorithm is the only signing algorithm: ECDSA P-256 with SHA-256 (RFC 6605).
const Algorithm = dns.ECDSAP256SHA256

// Key is one key of a zone as the control plane stores it: its public half in the DNSKEY's
// presentation form, its private half sealed (see Sealer), and its timeline in Unix seconds.
// A key is published (in the DNSKEY record set) from Publish until Remove, and signs from
// Activate until Retire; 0 for Retire or Remove means never.
type Key struct {
	// Tag is the key tag (RFC 4034 Appendix B).
	Tag uint16 `json:"tag"`
	// Role is what the key signs.
	Role Role `json:"role"`
	// PublicKey is the DNSKEY's public key field, base64.
	PublicKey string `json:"public_key"`
	// Sealed is the private key sealed with the fleet's seal key; only a Sealer opens it.
	Sealed []byte `json:"sealed"`
	// Created is when the key was generated.
	Created int64 `json:"created"`
	// Publish, Activate, Retire and Remove are the key's timeline.
	Publish  int64 `json:"publish"`
	Activate int64 `json:"activate"`
	Retire   int64 `json:"retire,omitempty"`
	Remove   int64 `json:"remove,omitempty"`
	// FinishAfter, on a KSK or CSK that a rollover introduced, is the earliest time the
	// rollover may be finished (FinishRollover); 0 otherwise. Its start is Publish.
	FinishAfter int64 `json:"finish_after,omitempty"`
}

// ZoneKeys are the keys of one zone.
type ZoneKeys struct {
	// Zone is the apex, lower case with the final dot.
	Zone string `json:"zone"`
	// Keys are the zone's keys, oldest first.
	Keys []Key `json:"keys"`
}

// Flags returns the DNSKEY flags of the key's role: 257 (SEP) for a CSK or KSK, 256 for a ZSK.
func (r Role) Flags() uint16 {
	if r == RoleZSK {
		return dns.ZONE
	}
	return dns.ZONE | dns.SEP
}

// signsKeys reports whether a key of role r signs the DNSKEY record set.
func (r Role) signsKeys() bool { return r != RoleZSK }

// signsData reports whether a key of role r signs record sets other than DNSKEY.
func (r Role) signsData() bool { return r != RoleKSK }

// Published reports whether the key is in the DNSKEY record set at now (Unix seconds).
func (k *Key) Published(now int64) bool {
	return k.Publish <= now && (k.Remove == 0 || now < k.Remove)
}

// Signing reports whether the key signs at now (Unix seconds).
func (k *Key) Signing(now int64) bool {
	return k.Published(now) && k.Activate <= now && (k.Retire == 0 || now < k.Retire)
}

// State names the key's phase at now: "published" (not yet signing), "active", "retired"
// (still published, no longer signing), "removed" or "future".
func (k *Key) State(now int64) string {
	switch {
	case k.Signing(now):
		return "active"
	case k.Published(now) && now < k.Activate:
		return "published"
	case k.Published(now):
		return "retired"
	case now < k.Publish:
		return "future"
	}
	return "removed"
}

// DNSKEY returns the key's DNSKEY record at apex with ttl.
func (k *Key) DNSKEY(apex string, ttl uint32) *dns.DNSKEY {
	return &dns.DNSKEY{Hdr: dns.RR_Header{Name: apex, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: ttl},
		Flags: k.Role.Flags(), Protocol: 3, Algorithm: Algorithm, PublicKey: k.PublicKey}
}

// DS returns the DS record (SHA-256 digest) of the key at apex, for the parent zone.
func (k *Key) DS(apex string, ttl uint32) *dns.DS {
	return k.DNSKEY(apex, ttl).ToDS(dns.SHA256)
}

// Generate makes a new key of role for apex, its private half sealed by sealer, with the
// timeline publish, activate (Unix seconds; retire and remove unset). Its tag differs from
// every tag in avoid, so that a validator never has to try two keys for one signature.
func Generate(apex string, role Role, sealer *Sealer, now, publish, activate int64, avoid []Key) (Key, error) {
	if role != RoleCSK && role != RoleKSK && role != RoleZSK {
		return Key{}, fmt.Errorf("dnssec: unknown key role %q", role)
	}
	if sealer == nil {
		return Key{}, errors.New("dnssec: no seal key: cannot store a private key")
	}
	apex = dns.Fqdn(strings.ToLower(apex))
	for range 16 {
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return Key{}, fmt.Errorf("dnssec: generate key: %w", err)
		}
		dk := &dns.DNSKEY{Hdr: dns.RR_Header{Name: apex, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET},
			Flags: role.Flags(), Protocol: 3, Algorithm: Algorithm}
		if dk.PublicKey, err = publicKeyField(&priv.PublicKey); err != nil {
			return Key{}, err
		}
		tag := dk.KeyTag()
		if tagTaken(avoid, tag) {
			continue
		}
		raw, err := priv.Bytes()
		if err != nil {
			return Key{}, fmt.Errorf("dnssec: encode key: %w", err)
		}
		sealed, err := sealer.seal(raw, apex, tag)
		clear(raw)
		if err != nil {
			return Key{}, err
		}
		return Key{Tag: tag, Role: role, PublicKey: dk.PublicKey, Sealed: sealed, Created: now,
			Publish: publish, Activate: activate}, nil
	}
	return Key{}, errors.New("dnssec: no free key tag after 16 keys")
}

func tagTaken(keys []Key, tag uint16) bool {
	for i := range keys {
		if keys[i].Tag == tag {
			return true
		}
	}
	return false
}

// publicKeyField returns the DNSKEY public key field of an ECDSA P-256 key: X and Y, 32 bytes
// each (RFC 6605 §4), base64.
func publicKeyField(pub *ecdsa.PublicKey) (string, error) {
	point, err := pub.Bytes() // 0x04 || X || Y
	if err != nil || len(point) != 65 {
		return "", fmt.Errorf("dnssec: encode public key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(point[1:]), nil
}
