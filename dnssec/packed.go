package dnssec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/dns"
)

// signature is one signature the cache holds: the RRSIG record, and the same record ready to
// be packed into a response (packedRR), whose data were packed once when it was made.
// miekg/dns keeps an RRSIG's signature in base64 and decodes it at every pack; the packed
// form copies bytes.
type signature struct {
	rrsig  *dns.RRSIG
	packed *dns.PrivateRR
}

// newSignature returns the signature of rrsig, its data packed.
func newSignature(rrsig *dns.RRSIG) (*signature, error) {
	buf := make([]byte, dns.Len(rrsig)+16)
	n, err := dns.PackRR(rrsig, buf, 0, nil, false)
	if err != nil {
		return nil, fmt.Errorf("dnssec: pack the signature of %s: %w", rrsig.Hdr.Name, err)
	}
	start := rdataStart(buf, 0)
	data := &sigRdata{wire: buf[start:n:n], rrsig: rrsig}
	return &signature{rrsig: rrsig, packed: &dns.PrivateRR{Hdr: rrsig.Hdr, Data: data}}, nil
}

// as returns the signature as a record to append: the RRSIG or its packed form, owned by
// owner when it is not empty (a name a wildcard was expanded to), else by the signed set's
// owner. The cached records are shared, never changed: another owner gets a copy. A
// signature that is not cached has no packed form: the RRSIG, packed once, costs no more.
func (sig *signature) as(packed bool, owner string) dns.RR {
	packed = packed && sig.packed != nil
	switch {
	case packed && (owner == "" || owner == sig.packed.Hdr.Name):
		return sig.packed
	case packed:
		rr := &dns.PrivateRR{Hdr: sig.packed.Hdr, Data: sig.packed.Data}
		rr.Hdr.Name = owner
		return rr
	case owner == "" || owner == sig.rrsig.Hdr.Name:
		return sig.rrsig
	}
	rr := *sig.rrsig
	rr.Hdr.Name = owner
	return &rr
}

// errPackedOnly is the error of an operation that a packed signature does not support.
var errPackedOnly = errors.New("dnssec: a packed signature is only packed into a message")

// sigRdata is the data of an RRSIG record in wire form (RFC 4034 §3.1), for dns.PrivateRR:
// packing it copies the bytes. It is made by newSignature and never parsed or unpacked.
type sigRdata struct {
	wire  []byte
	rrsig *dns.RRSIG
}

// String returns the RRSIG's data in presentation form.
func (d *sigRdata) String() string {
	return strings.TrimPrefix(d.rrsig.String(), d.rrsig.Hdr.String())
}

// Parse is not supported: a packed signature is made from an RRSIG.
func (d *sigRdata) Parse([]string) error { return errPackedOnly }

// Pack copies the data into buf.
func (d *sigRdata) Pack(buf []byte) (int, error) {
	if len(buf) < len(d.wire) {
		return 0, dns.ErrBuf
	}
	return copy(buf, d.wire), nil
}

// Unpack is not supported: a response's RRSIG is unpacked as dns.RRSIG.
func (d *sigRdata) Unpack([]byte) (int, error) { return 0, errPackedOnly }

// Copy makes dest (a *sigRdata) share d's data, which is never changed.
func (d *sigRdata) Copy(dest dns.PrivateRdata) error {
	x, ok := dest.(*sigRdata)
	if !ok {
		return errPackedOnly
	}
	*x = *d
	return nil
}

// Len returns the length of the data in wire form.
func (d *sigRdata) Len() int { return len(d.wire) }
