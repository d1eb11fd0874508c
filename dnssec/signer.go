package dnssec

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
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
	// signerWire is the signer name (the apex) in wire form, as every RRSIG signs it.
	signerWire []byte
}

// SignerConfig configures NewSigner.
type SignerConfig struct {
	// DNSKEYTTL is the TTL of the DNSKEY record set; 0 means DefaultDNSKEYTTL.
	DNSKEYTTL uint32
	// CacheSize bounds the signatures kept; 0 means DefaultCacheSize.
	CacheSize int
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
	apex := dns.Fqdn(strings.ToLower(zk.Zone))
	s := &Signer{apex: apex, ttl: cfg.DNSKEYTTL, cache: newSigCache(cfg.CacheSize)}
	wire := make([]byte, len(apex)+2)
	n, err := dns.PackDomainName(apex, wire, 0, nil, false)
	if err != nil {
		return nil, fmt.Errorf("dnssec: zone %s: %w", apex, err)
	}
	s.signerWire = wire[:n]
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
// a new one costs a token of budget b (nil: unbounded), and ErrSignBudget says it is spent.
func (s *Signer) AppendSignatures(dst []dns.RR, rrset []dns.RR, now time.Time, b *Budget) ([]dns.RR, error) {
	return s.AppendSignaturesWith(dst, rrset, now, b, SignOptions{})
}

// AppendSignaturesOnce is AppendSignatures for a record set that is not expected again (the
// black-lie NSEC of a name that does not exist): its signatures are neither looked up in nor
// kept in the cache, so that a flood of random names neither pays for the cache nor pushes
// the signatures of the names that are asked for out of it.
func (s *Signer) AppendSignaturesOnce(dst []dns.RR, rrset []dns.RR, now time.Time, b *Budget) ([]dns.RR, error) {
	return s.AppendSignaturesWith(dst, rrset, now, b, SignOptions{Once: true})
}

// SignOptions say how AppendSignaturesWith appends a record set's signatures.
type SignOptions struct {
	// Once says the set is not expected again (AppendSignaturesOnce).
	Once bool
	// Packed appends each signature as a dns.PrivateRR of type RRSIG whose data were packed
	// when it was made: it packs into a message as the RRSIG does, without decoding the
	// base64 signature again, and is meant for a response about to be packed. It cannot be
	// copied with dns.Copy (it panics), parsed or unpacked.
	Packed bool
	// Wildcard, when not empty, says rrset is owned by a name the wildcard Wildcard ("*.<closest
	// encloser>") was expanded to: the set is signed as the wildcard's, whose Labels field
	// counts the wildcard's labels without the "*" (RFC 4035 §5.3.2), and the signatures are
	// appended under rrset's owner. One signature serves every name the wildcard answers;
	// the answer needs beside it the proof that the name itself does not exist.
	Wildcard string
}

// AppendSignaturesWith is AppendSignatures with the options opt.
func (s *Signer) AppendSignaturesWith(dst []dns.RR, rrset []dns.RR, now time.Time, b *Budget, opt SignOptions) ([]dns.RR, error) {
	if len(rrset) == 0 {
		return dst, nil
	}
	cached := !opt.Once
	t := now.Unix()
	h, owner := rrset[0].Header(), ""
	if opt.Wildcard != "" {
		// Signed as owned by the wildcard, found by content: the records are copies renamed
		// for this answer, whose identity names nothing.
		wh := *h
		wh.Name, h, owner = opt.Wildcard, &wh, h.Name
	}
	isKeys := rrset[0].Header().Rrtype == dns.TypeDNSKEY
	var w *wireBuf
	defer func() {
		if w != nil {
			wirePool.Put(w)
		}
	}()
	fresh := func(sig *signature) bool {
		return sig != nil && int64(sig.rrsig.Expiration)-t > int64(refreshAfter/time.Second) && int64(sig.rrsig.Inception) <= t
	}
	for i := range s.keys {
		k := &s.keys[i]
		if !k.Signing(t) || (isKeys && !k.Role.signsKeys()) || (!isKeys && !k.Role.signsData()) {
			continue
		}
		var rk refKey
		byRef := false
		if cached && opt.Wildcard == "" {
			if rk, byRef = makeRefKey(rrset, k.Tag); byRef {
				if sig := s.cache.getRef(rk); fresh(sig) {
					s.cached.Add(1)
					dst = append(dst, sig.as(opt.Packed, owner))
					continue
				}
			}
		}
		if w == nil {
			w = wirePool.Get().(*wireBuf)
			if err := w.canonical(rrset, opt.Wildcard); err != nil {
				return dst, err
			}
		}
		var sk sigKey
		if cached {
			sk = w.key(k.Tag)
			if sig := s.cache.get(sk); fresh(sig) {
				s.cached.Add(1)
				if byRef {
					s.cache.putRef(rk, sig)
				}
				dst = append(dst, sig.as(opt.Packed, owner))
				continue
			}
		}
		rrsig, err := s.signWithin(b, k, h, w, now)
		if err != nil {
			return dst, err
		}
		sig := &signature{rrsig: rrsig}
		if cached {
			// Packed once, for every response the cache will answer.
			if sig, err = newSignature(rrsig); err != nil {
				return dst, err
			}
			s.cache.put(sk, sig)
			if byRef {
				s.cache.putRef(rk, sig)
			}
		}
		dst = append(dst, sig.as(opt.Packed, owner))
	}
	return dst, nil
}

// signWithin is signWire within the zone's signing budget b: ErrSignBudget when b allows no
// more signatures now.
func (s *Signer) signWithin(b *Budget, k *signKey, h *dns.RR_Header, w *wireBuf, now time.Time) (*dns.RRSIG, error) {
	if !b.Allow(s.apex, now) {
		s.refused.Add(1)
		return nil, ErrSignBudget
	}
	rrsig, err := s.signWire(k, h, w, now)
	if err != nil {
		return nil, fmt.Errorf("dnssec: sign %s %s: %w", h.Name, dns.TypeToString[h.Rrtype], err)
	}
	s.signed.Add(1)
	return rrsig, nil
}

// signWire returns the RRSIG by key k over the record set of header h whose canonical form
// w holds, made at now (RFC 4034 §3.1.8.1: the hash of the RRSIG's fields before the
// signature, then the records). The fields that do not change per set (algorithm, key tag,
// signer name) were packed once, when the signer was made.
func (s *Signer) signWire(k *signKey, h *dns.RR_Header, w *wireBuf, now time.Time) (*dns.RRSIG, error) {
	labels := uint8(dns.CountLabel(h.Name))
	if strings.HasPrefix(h.Name, "*") {
		labels--
	}
	inception, expiration := uint32(now.Add(-inceptionSkew).Unix()), uint32(now.Add(validity).Unix())
	var fixed [18]byte
	binary.BigEndian.PutUint16(fixed[0:], h.Rrtype)
	fixed[2] = Algorithm
	fixed[3] = labels
	binary.BigEndian.PutUint32(fixed[4:], w.ttl)
	binary.BigEndian.PutUint32(fixed[8:], expiration)
	binary.BigEndian.PutUint32(fixed[12:], inception)
	binary.BigEndian.PutUint16(fixed[16:], k.Tag)
	hh := sha256.New()
	hh.Write(fixed[:])
	hh.Write(s.signerWire)
	hh.Write(w.data)
	var digest [sha256.Size]byte
	r, sv, err := ecdsa.Sign(rand.Reader, k.priv, hh.Sum(digest[:0]))
	if err != nil {
		return nil, err
	}
	var raw [64]byte
	r.FillBytes(raw[:32])
	sv.FillBytes(raw[32:])
	return &dns.RRSIG{Hdr: dns.RR_Header{Name: h.Name, Rrtype: dns.TypeRRSIG, Class: h.Class, Ttl: h.Ttl},
		TypeCovered: h.Rrtype, Algorithm: Algorithm, Labels: labels, OrigTtl: w.ttl,
		Expiration: expiration, Inception: inception, KeyTag: k.Tag, SignerName: s.apex,
		Signature: base64.StdEncoding.EncodeToString(raw[:])}, nil
}

// wireBuf holds a record set in canonical form (RFC 4034 §6): each record with its owner and
// the domain names in its data in lower case and the set's TTL, sorted, duplicates dropped.
// Buffers are reused (wirePool) so that a new signature allocates little.
type wireBuf struct {
	ttl   uint32
	data  []byte
	tmp   []byte
	spans [][3]int // of each record in tmp: start, start of its data, end
}

// rdataStart returns where the data of the uncompressed record packed at off in wire
// starts: after its owner name's labels and the type, class, TTL and data length.
func rdataStart(wire []byte, off int) int {
	for off < len(wire) && wire[off] != 0 {
		off += int(wire[off]) + 1
	}
	return off + 1 + 10
}

// wirePool holds wireBufs between signatures.
var wirePool = sync.Pool{New: func() any { return &wireBuf{data: make([]byte, 0, 512), tmp: make([]byte, 0, 512)} }}

// canonical puts rrset in canonical form in w.data, owned by owner when it is not empty (the
// wildcard a set was expanded from).
func (w *wireBuf) canonical(rrset []dns.RR, owner string) error {
	w.ttl = rrset[0].Header().Ttl
	w.tmp, w.spans = w.tmp[:0], w.spans[:0]
	for _, rr := range rrset {
		c := canonicalRR(rr, w.ttl)
		if owner != "" && c.Header().Name != owner {
			if c == rr {
				c = dns.Copy(rr)
			}
			c.Header().Name = owner
		}
		if c == rr {
			// dns.PackRR writes the data length into the record's header: never into a
			// record the answers share, which other goroutines read as they pack responses.
			c = dns.Copy(rr)
		}
		off := len(w.tmp)
		w.tmp = slices.Grow(w.tmp, dns.Len(c)+16)
		buf := w.tmp[:cap(w.tmp)]
		n, err := dns.PackRR(c, buf, off, nil, false)
		if err != nil {
			return fmt.Errorf("dnssec: pack %s: %w", rr.Header().Name, err)
		}
		w.tmp = buf[:n]
		w.spans = append(w.spans, [3]int{off, rdataStart(w.tmp, off), n})
	}
	if len(w.spans) > 1 {
		// Sorted by their data (RFC 4034 §6.3): what precedes it is the same in every record.
		slices.SortFunc(w.spans, func(a, b [3]int) int { return bytes.Compare(w.tmp[a[1]:a[2]], w.tmp[b[1]:b[2]]) })
	}
	w.data = w.data[:0]
	var prev []byte
	for i, sp := range w.spans {
		cur := w.tmp[sp[0]:sp[2]]
		if i > 0 && bytes.Equal(cur, prev) {
			continue
		}
		w.data = append(w.data, cur...)
		prev = cur
	}
	return nil
}

// key returns the cache key of the set in w signed by key tag.
func (w *wireBuf) key(tag uint16) sigKey {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], tag)
	h := sha256.New()
	h.Write(b[:])
	h.Write(w.data)
	var k sigKey
	h.Sum(k[:0])
	return k
}

// canonicalRR returns rr in canonical form with TTL ttl: rr itself when it already is, else
// a copy with its owner and the domain names of its data (for the types RFC 4034 §6.2 lists,
// as RFC 6840 §5.1 corrects it) in lower case.
func canonicalRR(rr dns.RR, ttl uint32) dns.RR {
	h := rr.Header()
	if h.Ttl == ttl && isLower(h.Name) && rdataLower(rr) {
		return rr
	}
	c := dns.Copy(rr)
	c.Header().Name = strings.ToLower(h.Name)
	c.Header().Ttl = ttl
	switch x := c.(type) {
	case *dns.NS:
		x.Ns = strings.ToLower(x.Ns)
	case *dns.MD:
		x.Md = strings.ToLower(x.Md)
	case *dns.MF:
		x.Mf = strings.ToLower(x.Mf)
	case *dns.CNAME:
		x.Target = strings.ToLower(x.Target)
	case *dns.SOA:
		x.Ns, x.Mbox = strings.ToLower(x.Ns), strings.ToLower(x.Mbox)
	case *dns.MB:
		x.Mb = strings.ToLower(x.Mb)
	case *dns.MG:
		x.Mg = strings.ToLower(x.Mg)
	case *dns.MR:
		x.Mr = strings.ToLower(x.Mr)
	case *dns.PTR:
		x.Ptr = strings.ToLower(x.Ptr)
	case *dns.MINFO:
		x.Rmail, x.Email = strings.ToLower(x.Rmail), strings.ToLower(x.Email)
	case *dns.MX:
		x.Mx = strings.ToLower(x.Mx)
	case *dns.RP:
		x.Mbox, x.Txt = strings.ToLower(x.Mbox), strings.ToLower(x.Txt)
	case *dns.AFSDB:
		x.Hostname = strings.ToLower(x.Hostname)
	case *dns.RT:
		x.Host = strings.ToLower(x.Host)
	case *dns.SIG:
		x.SignerName = strings.ToLower(x.SignerName)
	case *dns.PX:
		x.Map822, x.Mapx400 = strings.ToLower(x.Map822), strings.ToLower(x.Mapx400)
	case *dns.NAPTR:
		x.Replacement = strings.ToLower(x.Replacement)
	case *dns.KX:
		x.Exchanger = strings.ToLower(x.Exchanger)
	case *dns.SRV:
		x.Target = strings.ToLower(x.Target)
	case *dns.DNAME:
		x.Target = strings.ToLower(x.Target)
	}
	return c
}

// rdataLower reports whether the domain names in rr's data that canonical form lower-cases
// are in lower case already (always true of the types without such names).
func rdataLower(rr dns.RR) bool {
	switch x := rr.(type) {
	case *dns.NS:
		return isLower(x.Ns)
	case *dns.CNAME:
		return isLower(x.Target)
	case *dns.SOA:
		return isLower(x.Ns) && isLower(x.Mbox)
	case *dns.PTR:
		return isLower(x.Ptr)
	case *dns.MX:
		return isLower(x.Mx)
	case *dns.SRV:
		return isLower(x.Target)
	case *dns.DNAME:
		return isLower(x.Target)
	case *dns.NAPTR:
		return isLower(x.Replacement)
	case *dns.MD, *dns.MF, *dns.MB, *dns.MG, *dns.MR, *dns.MINFO, *dns.RP, *dns.AFSDB, *dns.RT, *dns.SIG, *dns.PX, *dns.KX:
		return false // rare: always copied and lowered
	}
	return true
}

// isLower reports whether name has no ASCII upper-case letter.
func isLower(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true
}
