package dnssec

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// Signature validity: a signature is valid from an hour before it is made (clocks differ)
// for a week, and a cached one is used while at least half of that remains.
const (
	inceptionSkew = time.Hour
	validity      = 7 * 24 * time.Hour
	refreshAfter  = validity / 2
)

// DefaultDNSKEYTTL is the TTL of the DNSKEY record set unless the zone sets one.
const DefaultDNSKEYTTL = 3600

// DefaultSignRate is the number of new signatures a Signer makes a second by default (and
// its burst): a flood of questions that each need a new signature (random names, each with
// its own denial) costs at most this much signing; answers from the cache are not counted.
const DefaultSignRate = 2000

// ErrSignBudget is the error of a signature that the signing budget does not allow now.
var ErrSignBudget = errors.New("dnssec: the signing budget is spent for now")

// signKey is one opened key of a Signer.
type signKey struct {
	Key
	dnskey *dns.DNSKEY
	priv   *ecdsa.PrivateKey
}

// Signer signs one zone's answers at answer time: it holds the zone's opened keys and a
// bounded cache of signatures. It is safe for concurrent use.
type Signer struct {
	apex    string
	ttl     uint32
	keys    []signKey
	cache   *sigCache
	signed  atomic.Uint64
	cached  atomic.Uint64
	refused atomic.Uint64

	budgetMu sync.Mutex
	rate     float64 // new signatures a second
	tokens   float64
	last     time.Time
}

// SignerConfig configures NewSigner.
type SignerConfig struct {
	// DNSKEYTTL is the TTL of the DNSKEY record set; 0 means DefaultDNSKEYTTL.
	DNSKEYTTL uint32
	// CacheSize bounds the signatures kept; 0 means DefaultCacheSize.
	CacheSize int
	// SignRate bounds the new signatures made a second (and the burst); 0 means
	// DefaultSignRate.
	SignRate int
}

// NewSigner opens zk's keys with sealer. Keys that are removed at now are skipped.
func NewSigner(zk *ZoneKeys, sealer *Sealer, cfg SignerConfig) (*Signer, error) {
	if zk == nil || len(zk.Keys) == 0 {
		return nil, errors.New("dnssec: no keys")
	}
	if sealer == nil {
		return nil, errors.New("dnssec: no seal secret: the zone's keys cannot be opened")
	}
	if cfg.DNSKEYTTL == 0 {
		cfg.DNSKEYTTL = DefaultDNSKEYTTL
	}
	if cfg.SignRate <= 0 {
		cfg.SignRate = DefaultSignRate
	}
	apex := dns.Fqdn(strings.ToLower(zk.Zone))
	s := &Signer{apex: apex, ttl: cfg.DNSKEYTTL, cache: newSigCache(cfg.CacheSize),
		rate: float64(cfg.SignRate), tokens: float64(cfg.SignRate)}
	for _, k := range zk.Keys {
		raw, err := sealer.open(k.Sealed, apex, k.Tag)
		if err != nil {
			return nil, fmt.Errorf("dnssec: zone %s key %d: %w", apex, k.Tag, err)
		}
		priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), raw)
		clear(raw)
		if err != nil {
			return nil, fmt.Errorf("dnssec: zone %s key %d: %w", apex, k.Tag, err)
		}
		dk := k.DNSKEY(apex, cfg.DNSKEYTTL)
		if pub, err := publicKeyField(&priv.PublicKey); err != nil || pub != k.PublicKey || dk.KeyTag() != k.Tag {
			return nil, fmt.Errorf("dnssec: zone %s key %d: the private key does not match the public key", apex, k.Tag)
		}
		s.keys = append(s.keys, signKey{Key: k, dnskey: dk, priv: priv})
	}
	return s, nil
}

// Zone returns the apex the signer signs for.
func (s *Signer) Zone() string { return s.apex }

// Stats returns the signatures made, those taken from the cache, those the signing budget
// refused, and the cache's size.
func (s *Signer) Stats() (signed, cached, refused uint64, size int) {
	return s.signed.Load(), s.cached.Load(), s.refused.Load(), s.cache.len()
}

// spend takes one new signature from the budget at now, and reports whether there was one.
func (s *Signer) spend(now time.Time) bool {
	s.budgetMu.Lock()
	defer s.budgetMu.Unlock()
	if !s.last.IsZero() && now.After(s.last) {
		s.tokens = min(s.rate, s.tokens+now.Sub(s.last).Seconds()*s.rate)
	}
	if now.After(s.last) {
		s.last = now
	}
	if s.tokens < 1 {
		s.refused.Add(1)
		return false
	}
	s.tokens--
	return true
}

// AppendDNSKEYs appends the DNSKEY record set at now: every key published then.
func (s *Signer) AppendDNSKEYs(dst []dns.RR, now time.Time) []dns.RR {
	t := now.Unix()
	for i := range s.keys {
		if s.keys[i].Published(t) {
			dst = append(dst, s.keys[i].dnskey)
		}
	}
	return dst
}

// AppendSignatures appends the RRSIG records of rrset (one record set: records of one owner,
// type and class) at now: one by each key that signs it then. A signature comes from the
// cache when one of the same key over the same records has at least half its validity left;
// a new one costs the signing budget, and ErrSignBudget says it is spent.
func (s *Signer) AppendSignatures(dst []dns.RR, rrset []dns.RR, now time.Time) ([]dns.RR, error) {
	if len(rrset) == 0 {
		return dst, nil
	}
	t := now.Unix()
	isKeys := rrset[0].Header().Rrtype == dns.TypeDNSKEY
	var digest []byte
	for i := range s.keys {
		k := &s.keys[i]
		if !k.Signing(t) || (isKeys && !k.Role.signsKeys()) || (!isKeys && !k.Role.signsData()) {
			continue
		}
		if digest == nil {
			var err error
			if digest, err = canonicalDigest(rrset); err != nil {
				return dst, err
			}
		}
		sk := cacheKey(k.Tag, digest)
		if sig := s.cache.get(sk); sig != nil && int64(sig.Expiration)-t > int64(refreshAfter/time.Second) && int64(sig.Inception) <= t {
			s.cached.Add(1)
			dst = append(dst, sig)
			continue
		}
		if !s.spend(now) {
			return dst, ErrSignBudget
		}
		sig := &dns.RRSIG{Hdr: dns.RR_Header{Ttl: rrset[0].Header().Ttl}, Algorithm: Algorithm,
			KeyTag: k.Tag, SignerName: s.apex,
			Inception: uint32(now.Add(-inceptionSkew).Unix()), Expiration: uint32(now.Add(validity).Unix())}
		if err := sig.Sign(k.priv, rrset); err != nil {
			return dst, fmt.Errorf("dnssec: sign %s %s: %w", rrset[0].Header().Name, dns.TypeToString[rrset[0].Header().Rrtype], err)
		}
		s.signed.Add(1)
		s.cache.put(sk, sig)
		dst = append(dst, sig)
	}
	return dst, nil
}

// canonicalDigest returns the SHA-256 of rrset's records in canonical form (RFC 4034 §6):
// owner in lower case, records sorted by their data.
func canonicalDigest(rrset []dns.RR) ([]byte, error) {
	wires := make([][]byte, 0, len(rrset))
	buf := make([]byte, 0, 512)
	for _, rr := range rrset {
		c := rr
		if name := c.Header().Name; strings.ToLower(name) != name {
			c = dns.Copy(rr)
			c.Header().Name = strings.ToLower(name)
		}
		off := len(buf)
		buf = slices.Grow(buf, dns.Len(c)+16)
		buf = buf[:cap(buf)]
		n, err := dns.PackRR(c, buf, off, nil, false)
		if err != nil {
			return nil, fmt.Errorf("dnssec: pack %s: %w", rr.Header().Name, err)
		}
		buf = buf[:n]
		wires = append(wires, buf[off:n:n])
	}
	sort.Slice(wires, func(i, j int) bool { return string(wires[i]) < string(wires[j]) })
	h := sha256.New()
	for _, w := range wires {
		h.Write(w)
	}
	return h.Sum(nil), nil
}

func cacheKey(tag uint16, digest []byte) sigKey {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], tag)
	h := sha256.New()
	h.Write(b[:])
	h.Write(digest)
	var k sigKey
	h.Sum(k[:0])
	return k
}
