package zonefile

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/config/rdata"
	"github.com/vigil-dns/vigil/internal/safetext"
)

// Options says what to import and how to read included files.
type Options struct {
	// Zone is the zone's apex, e.g. "example.com" (the final dot optional): the origin the
	// file starts with, and the name of the zone written.
	Zone string
	// Regions are the document's regions (a document names at least one). Default: us-east.
	Regions []string
	// ReadFile reads a file an $INCLUDE names, at its path resolved against the directory of
	// the file that names it; nil refuses $INCLUDE.
	ReadFile func(path string) ([]byte, error)
}

// Result is what an import made of a zone file.
type Result struct {
	// Document holds the zone, and is valid as `vigil validate` checks a document; nil when
	// the file has Errors.
	Document *config.Document
	// Errors are the file's malformed entries, every one with its line: the file was not
	// imported.
	Errors []Problem
	// Omitted lists each record of the file that the document leaves out or holds otherwise
	// than written, with why.
	Omitted []Problem
	// Notes are what the document does differently without losing any data: the SOA serial
	// (Vigil keeps its own), a record written twice.
	Notes []Problem
	// Records counts the records the document holds, in Document's record sets.
	Records int
	// Text is Document in YAML (Write), read back as `vigil validate` reads a file.
	Text []byte
}

// ErrZoneName is the error of an Options.Zone that names no zone.
var ErrZoneName = errors.New("zonefile: invalid zone name")

// DefaultRegions are the regions of a document imported without any named.
func DefaultRegions() []string { return []string{"us-east"} }

// Import reads the zone file named file, whose text is data, into a document with its one
// zone. The error is for options that cannot be followed; the file's own problems are in the
// Result.
func Import(file string, data []byte, opts Options) (*Result, error) {
	apex := rdata.Fqdn(strings.TrimSpace(opts.Zone))
	if apex == "" || apex == "." {
		return nil, fmt.Errorf("%w: the zone's name is required, e.g. example.com", ErrZoneName)
	}
	if p := rdata.NameProblem(apex); p != "" {
		return nil, fmt.Errorf("%w %q: %s", ErrZoneName, opts.Zone, p)
	}
	if len(data) > MaxInput {
		return nil, fmt.Errorf("zonefile: %s holds %d bytes, more than %d MiB", file, len(data), MaxInput>>20)
	}
	r := &reader{readFile: opts.ReadFile, input: len(data)}
	if opts.ReadFile != nil {
		r.includes = []string{filepath.Clean(file)}
	}
	r.readText(cursor{file: file, origin: apex}, string(data), 0)
	res := &Result{Errors: inOrder(r.errs)}
	if len(r.errs) > 0 {
		return res, nil
	}
	regions := opts.Regions
	if len(regions) == 0 {
		regions = DefaultRegions()
	}
	b := newBuilder(apex)
	for _, rec := range r.records {
		b.add(rec)
	}
	b.checkTTLs()
	b.atCuts()
	doc := config.DefaultDocument()
	doc.Regions = slices.Clone(regions)
	doc.Zones = []config.Zone{b.zone()}
	if err := b.settle(&doc); err != nil {
		return nil, err
	}
	b.zoneTTL(&doc.Zones[0])
	res.Document, res.Omitted, res.Notes = &doc, inOrder(b.omitted), inOrder(b.notes)
	for _, s := range b.sets {
		res.Records += len(s.recs)
	}
	var text bytes.Buffer
	comment := fmt.Sprintf("Zone %s, imported from %s by vigil import zonefile: %d records in %d record sets.", apex, safetext.Escape(file), res.Records, len(b.sets))
	if err := Write(&text, &doc, comment); err != nil {
		return nil, fmt.Errorf("zonefile: %w", err)
	}
	if _, err := config.Parse(text.Bytes()); err != nil {
		return nil, fmt.Errorf("zonefile: the document written does not read back as valid: %w", err)
	}
	res.Text = text.Bytes()
	return res, nil
}

// set is a record set being built, with the lines of its records.
type set struct {
	owner string // absolute, lower case
	typ   config.RecordType
	recs  []setRecord
	seen  map[string]int // a record's data in wire form → its index in recs
}

// setRecord is one record of a set, with its value, TTL and line.
type setRecord struct {
	value string
	ttl   uint32
	file  string
	line  int
}

// builder groups a file's records into record sets, and lists what it leaves out.
type builder struct {
	apex    string
	sets    []*set
	index   map[string]*set // owner + " " + type → set
	soa     *config.SOA
	soaAt   record
	omitted []Problem
	notes   []Problem
}

func newBuilder(apex string) *builder {
	return &builder{apex: apex, index: map[string]*set{}}
}

func (b *builder) omit(rec record, format string, args ...any) {
	b.omitted = append(b.omitted, Problem{File: rec.file, Line: rec.line, Message: fmt.Sprintf(format, args...)})
}

func (b *builder) note(rec record, format string, args ...any) {
	b.notes = append(b.notes, Problem{File: rec.file, Line: rec.line, Message: fmt.Sprintf(format, args...)})
}

// dnssecTypes are the records of a signed zone, which a location makes itself when it signs.
var dnssecTypes = map[uint16]bool{
	dns.TypeRRSIG: true, dns.TypeNSEC: true, dns.TypeNSEC3: true, dns.TypeNSEC3PARAM: true,
	dns.TypeDNSKEY: true, dns.TypeCDS: true, dns.TypeCDNSKEY: true, dns.TypeKEY: true, dns.TypeSIG: true,
	dns.TypeNXT: true,
}

// served lists the types a record set may have, in words.
func served() string {
	var names []string
	for _, t := range rdata.Types() {
		names = append(names, dns.Type(t).String())
	}
	return strings.Join(names, ", ")
}

// add places one record in its set, or says why it is left out.
func (b *builder) add(rec record) {
	h := rec.rr.Header()
	owner := rdata.Lower(h.Name)
	typ := dns.Type(h.Rrtype).String()
	switch {
	case h.Class != dns.ClassINET:
		b.omit(rec, "%s %s left out: class %s; Vigil serves class IN only", owner, typ, dns.Class(h.Class))
		return
	case owner != b.apex && !strings.HasSuffix(owner, "."+b.apex):
		b.omit(rec, "%s %s left out: the name is outside zone %s", owner, typ, b.apex)
		return
	case h.Rrtype == dns.TypeSOA:
		b.addSOA(rec, owner)
		return
	case h.Rrtype == dns.TypeZONEMD:
		b.omit(rec, "%s %s left out: a ZONEMD digest describes this file, not the zone a location serves", owner, typ)
		return
	case dnssecTypes[h.Rrtype]:
		b.omit(rec, "%s %s left out: it belongs to a zone signed beforehand, and signing is Vigil's own: set dnssec: {enabled: true} on the zone and the locations sign it with keys the control plane makes (then give the parent the DS records of `vigil dnssec ds`)", owner, typ)
		return
	case !slices.Contains(rdata.Types(), h.Rrtype):
		b.omit(rec, "%s %s left out: Vigil does not serve type %s (it serves %s)", owner, typ, typ, served())
		return
	}
	if p := rdata.NameProblem(strings.TrimPrefix(owner, "*.")); p != "" {
		b.omit(rec, "%s %s left out: Vigil does not hold the name: %s", owner, typ, p)
		return
	}
	v, err := value(rec.rr)
	if err != nil {
		b.omit(rec, "%s %s left out: its data: %v", owner, typ, err)
		return
	}
	wire, _ := wireData(lowerNames(rec.rr))
	key := owner + " " + typ
	s := b.index[key]
	if s == nil {
		s = &set{owner: owner, typ: config.RecordType(typ), seen: map[string]int{}}
		b.index[key] = s
		b.sets = append(b.sets, s)
	}
	if k, dup := s.seen[string(wire)]; dup {
		o := s.recs[k]
		b.note(rec, "%s %s %s: the same record as %s:%d, served once", owner, typ, v, o.file, o.line)
		return
	}
	s.seen[string(wire)] = len(s.recs)
	s.recs = append(s.recs, setRecord{value: v, ttl: h.Ttl, file: rec.file, line: rec.line})
}

// addSOA takes the zone's fields from its SOA record; the serial is the locations' own.
func (b *builder) addSOA(rec record, owner string) {
	soa := rec.rr.(*dns.SOA)
	switch {
	case owner != b.apex:
		b.omit(rec, "%s SOA left out: an SOA below the apex starts another zone; import %s on its own", owner, owner)
		return
	case b.soa != nil && dns.IsDuplicate(rec.rr, b.soaAt.rr) && rec.rr.Header().Ttl == b.soaAt.rr.Header().Ttl:
		b.note(rec, "the same SOA as %s:%d (a zone transfer prints it first and last)", b.soaAt.file, b.soaAt.line)
		return
	case b.soa != nil:
		b.omit(rec, "SOA left out: the zone's SOA is the one of %s:%d", b.soaAt.file, b.soaAt.line)
		return
	}
	b.soa = &config.SOA{MName: rdata.Lower(soa.Ns), RName: rdata.Lower(soa.Mbox), Serial: 0,
		Refresh: soa.Refresh, Retry: soa.Retry, Expire: soa.Expire, Minimum: soa.Minttl, TTL: soa.Hdr.Ttl}
	b.soaAt = rec
	b.note(rec, "SOA serial %d not imported: each location sets the zone's serial itself", soa.Serial)
	if soa.Hdr.Ttl == 0 {
		b.omit(rec, "SOA TTL 0 not imported: a location serves the SOA with TTL %d when the zone sets none", config.DefaultSOA().TTL)
	}
}

// checkTTLs gives each set the lowest TTL of its records (RFC 2181 §5.2: a record set has one
// TTL) and lists the records whose TTL that changes.
func (b *builder) checkTTLs() {
	for _, s := range b.sets {
		low := s.recs[0].ttl
		for _, r := range s.recs {
			low = min(low, r.ttl)
		}
		for i := range s.recs {
			if r := &s.recs[i]; r.ttl != low {
				b.omitted = append(b.omitted, Problem{File: r.file, Line: r.line, Message: fmt.Sprintf(
					"%s %s %s: TTL %d changed to %d, the lowest of its set: a record set has one TTL (RFC 2181 §5.2)",
					s.owner, s.typ, r.value, r.ttl, low)})
				r.ttl = low
			}
		}
	}
}

// atCuts leaves out the sets at a delegation (an NS set below the apex) other than NS, DS and
// address glue: a resolver gets a referral there, so no location answers them. (Validation
// refuses them too, but it names whichever of the two sets comes later, which may be the NS.)
func (b *builder) atCuts() {
	cuts := map[string]bool{}
	for _, s := range b.sets {
		if s.typ == config.TypeNS && s.owner != b.apex {
			cuts[s.owner] = true
		}
	}
	b.sets = slices.DeleteFunc(b.sets, func(s *set) bool {
		switch s.typ {
		case config.TypeNS, config.TypeDS, config.TypeA, config.TypeAAAA:
			return false
		}
		if !cuts[s.owner] {
			return false
		}
		for _, r := range s.recs {
			b.omitted = append(b.omitted, Problem{File: r.file, Line: r.line, Message: fmt.Sprintf(
				"%s %s left out: %s is delegated (it has an NS record set), so resolvers get a referral there and no location answers it; beside the NS only DS and A or AAAA glue are served",
				s.owner, s.typ, s.owner)})
		}
		return true
	})
}

// relative writes owner as a record set's name: relative to the apex ("www", "@", "*.eu")
// when that reads back as owner, else absolute.
func (b *builder) relative(owner string) string {
	if owner == b.apex {
		return "@"
	}
	rel := strings.TrimSuffix(owner, "."+b.apex)
	if config.OwnerName(rel, b.apex) == owner {
		return rel
	}
	return owner
}

// zone returns the zone of the sets, each with its TTL.
func (b *builder) zone() config.Zone {
	z := config.DefaultZone()
	z.Name = b.apex
	if b.soa != nil {
		z.SOA = *b.soa
	}
	z.SOA.Serial = config.DefaultSOA().Serial
	for _, s := range b.sets {
		rs := config.RecordSet{Name: b.relative(s.owner), Type: s.typ, TTL: config.TTL(s.recs[0].ttl)}
		for _, r := range s.recs {
			rs.Records = append(rs.Records, config.Record{Value: r.value})
		}
		z.RecordSets = append(z.RecordSets, rs)
	}
	return z
}

// zoneTTL sets z's TTL to the one most of its record sets have, and leaves it out of them.
func (b *builder) zoneTTL(z *config.Zone) {
	count := map[uint32]int{}
	best, most := z.TTL, 0
	for _, rs := range z.RecordSets {
		t := *rs.TTL
		count[t]++
		if n := count[t]; n > most || n == most && t < best {
			best, most = t, n
		}
	}
	z.TTL = best
	for i := range z.RecordSets {
		if *z.RecordSets[i].TTL == best {
			z.RecordSets[i].TTL = nil
		}
	}
}

// inOrder sorts problems by line within each file, the files in the order they first appear.
func inOrder(ps []Problem) []Problem {
	rank := map[string]int{}
	for _, p := range ps {
		if _, ok := rank[p.File]; !ok {
			rank[p.File] = len(rank)
		}
	}
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if c := rank[a.File] - rank[b.File]; c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	return ps
}
