package zonefile

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config/rdata"
)

// Bounds of what one import reads.
const (
	// MaxIncludeDepth is how deep $INCLUDE may nest: a file included by a file included by
	// the zone file is 2 deep.
	MaxIncludeDepth = 8
	// MaxInput is the most bytes one import reads, the zone file and every file it
	// includes together.
	MaxInput = 256 << 20
)

// Problem is one thing said about a line of a zone file.
type Problem struct {
	// File is the file's name as given (the zone file's, or an included file's path).
	File string `json:"file"`
	// Line is the line, from 1; 0 for the file as a whole.
	Line int `json:"line"`
	// Message says what, and what to do about it.
	Message string `json:"message"`
}

// String writes the problem as compilers do: "FILE:LINE: message".
func (p Problem) String() string {
	if p.Line == 0 {
		return p.File + ": " + p.Message
	}
	return p.File + ":" + strconv.Itoa(p.Line) + ": " + p.Message
}

// record is one record of the zone file, read, with where it was written.
type record struct {
	rr   dns.RR
	file string
	line int
}

// reader reads a zone file and the files it includes into records.
type reader struct {
	readFile func(path string) ([]byte, error)
	records  []record
	errs     []Problem
	input    int // bytes read so far
	// ttl is the TTL of a record that states none: the last $TTL's or, before any, the
	// last TTL a record stated (RFC 1035 §5.1, RFC 2308 §4); byDirective says which.
	ttl                 uint32
	hasTTL, byDirective bool
	includes            []string // the files being read, outermost first
}

// cursor is the state that entries of one file set for the entries after them, and that an
// $INCLUDE gives back when the included file ends.
type cursor struct {
	file   string
	origin string // absolute
	owner  string // the last owner named, absolute; "" before any
}

func (r *reader) fail(file string, line int, format string, args ...any) {
	r.errs = append(r.errs, Problem{File: file, Line: line, Message: fmt.Sprintf(format, args...)})
}

// readText reads the text of file with origin, depth includes deep, and returns the owner
// its last record named.
func (r *reader) readText(c cursor, text string, depth int) string {
	entries, lexErrs := split(text)
	for _, e := range lexErrs {
		r.fail(c.file, e.line, "%s", e.msg)
	}
	for _, e := range entries {
		if !e.blank && strings.HasPrefix(e.fields[0], "$") {
			r.directive(&c, e, depth)
			continue
		}
		r.entry(&c, e)
	}
	return c.owner
}

// directive follows $ORIGIN, $TTL and $INCLUDE, and refuses any other.
func (r *reader) directive(c *cursor, e entry, depth int) {
	name, args := strings.ToUpper(e.fields[0]), e.fields[1:]
	switch name {
	case "$ORIGIN":
		if len(args) != 1 {
			r.fail(c.file, e.line, "$ORIGIN takes one domain name, got %d words", len(args))
			return
		}
		o, err := absolute(args[0], c.origin)
		if err != nil {
			r.fail(c.file, e.line, "$ORIGIN %s: %v", args[0], err)
			return
		}
		c.origin = o
	case "$TTL":
		if len(args) != 1 {
			r.fail(c.file, e.line, "$TTL takes one TTL, got %d words", len(args))
			return
		}
		ttl, ok := parseTTL(args[0])
		if !ok {
			r.fail(c.file, e.line, "$TTL %s: not a TTL (seconds, or units such as 1h30m)", args[0])
			return
		}
		r.ttl, r.hasTTL, r.byDirective = ttl, true, true
	case "$INCLUDE":
		r.include(c, e, args, depth)
	case "$GENERATE":
		r.fail(c.file, e.line, "$GENERATE is not supported: write its records out, e.g. with BIND's named-compilezone -s full -o - ZONE FILE")
	default:
		r.fail(c.file, e.line, "unknown directive %s: zone files have $ORIGIN, $TTL, $INCLUDE and $GENERATE", e.fields[0])
	}
}

// include reads the file an $INCLUDE names, relative to the directory of the file that
// names it, with the origin it gives (or the current one); the origin and owner of the
// including file are its own again afterwards.
func (r *reader) include(c *cursor, e entry, args []string, depth int) {
	if len(args) < 1 || len(args) > 2 {
		r.fail(c.file, e.line, "$INCLUDE takes a file name and an optional origin, got %d words", len(args))
		return
	}
	if r.readFile == nil {
		r.fail(c.file, e.line, "$INCLUDE cannot be followed when the zone file is read from standard input: give its path instead")
		return
	}
	if depth >= MaxIncludeDepth {
		r.fail(c.file, e.line, "$INCLUDE nests more than %d files deep", MaxIncludeDepth)
		return
	}
	path := strings.Trim(args[0], `"`)
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(c.file), path)
	}
	for _, f := range r.includes {
		if f == path {
			r.fail(c.file, e.line, "$INCLUDE %s includes a file that is being read (%s): a loop", args[0], strings.Join(r.includes, " -> "))
			return
		}
	}
	origin := c.origin
	if len(args) == 2 {
		o, err := absolute(args[1], c.origin)
		if err != nil {
			r.fail(c.file, e.line, "$INCLUDE origin %s: %v", args[1], err)
			return
		}
		origin = o
	}
	data, err := r.readFile(path)
	if err != nil {
		r.fail(c.file, e.line, "$INCLUDE: %v", err)
		return
	}
	if r.input += len(data); r.input > MaxInput {
		r.fail(c.file, e.line, "$INCLUDE %s: the zone file and its includes hold more than %d MiB", args[0], MaxInput>>20)
		return
	}
	r.includes = append(r.includes, path)
	r.readText(cursor{file: path, origin: origin, owner: c.owner}, string(data), depth+1)
	r.includes = r.includes[:len(r.includes)-1]
}

// atLine finds the line and column miekg/dns gives at the end of its errors.
var atLine = regexp.MustCompile(` at line: (\d+):\d+$`)

// entry reads one record with miekg/dns's zone parser, given the owner (for an entry that
// names none), default TTL and origin that the entries before it set.
func (r *reader) entry(c *cursor, e entry) {
	if !e.blank {
		owner, err := absolute(e.fields[0], c.origin)
		if err != nil {
			c.owner = ""
			r.fail(c.file, e.line, "owner %s: %v", e.fields[0], err)
			return
		}
		c.owner = owner
	} else if c.owner == "" {
		r.fail(c.file, e.line, "the line starts with a space, so it takes the owner of the record before it, and there is none (or it was not a valid name)")
		return
	}
	var b strings.Builder
	skip := 0 // lines of b before the entry's own
	if r.hasTTL {
		fmt.Fprintf(&b, "$TTL %d\n", r.ttl)
		skip = 1
	}
	if e.blank {
		b.WriteString(c.owner)
	}
	b.WriteString(e.text)
	b.WriteByte('\n')
	zp := dns.NewZoneParser(strings.NewReader(b.String()), c.origin, "")
	zp.SetIncludeAllowed(false)
	rr, ok := zp.Next()
	if err := zp.Err(); err != nil {
		msg := strings.TrimPrefix(err.Error(), "dns: ")
		line := e.line
		if m := atLine.FindStringSubmatch(msg); m != nil {
			msg = strings.TrimSuffix(msg, m[0])
			if n, err := strconv.Atoi(m[1]); err == nil && n-skip >= 1 {
				line = e.line + n - skip - 1
			}
		}
		if tok, ok := strings.CutPrefix(msg, "not a TTL: "); ok {
			msg = "not a type, class or TTL: " + tok
		}
		if strings.HasPrefix(msg, "missing TTL with no previous value") {
			msg = "the record states no TTL, and no $TTL or record before it gives one: add $TTL at the top of the file"
		}
		r.fail(c.file, line, "%s", msg)
		return
	}
	if !ok {
		r.fail(c.file, e.line, "no record: an owner name without a type and data")
		return
	}
	if _, more := zp.Next(); more || zp.Err() != nil {
		r.fail(c.file, e.line, "more than one record in one entry")
		return
	}
	if w, err := wireData(rr); err != nil {
		r.fail(c.file, e.line, "%s record: its data does not encode: %v", dns.Type(rr.Header().Rrtype), err)
		return
	} else if len(w) == 0 && servedType(rr.Header().Rrtype) {
		r.fail(c.file, e.line, "%s record without data", dns.Type(rr.Header().Rrtype))
		return
	}
	if !r.byDirective {
		r.ttl, r.hasTTL = rr.Header().Ttl, true
	}
	r.records = append(r.records, record{rr: rr, file: c.file, line: e.line})
}

// servedType reports whether records of type t are never empty: the types Vigil serves, and
// SOA. miekg/dns reads a record whose data is left out as an empty one (the form of a
// dynamic update).
func servedType(t uint16) bool {
	return t == dns.TypeSOA || slices.Contains(rdata.Types(), t)
}

// wireData returns the data of rr in wire form.
func wireData(rr dns.RR) ([]byte, error) {
	c := dns.Copy(rr)
	c.Header().Name = "."
	buf := make([]byte, dns.Len(c)+1)
	n, err := dns.PackRR(c, buf, 0, nil, false)
	if err != nil {
		return nil, err
	}
	const header = 1 + 10 // the root name, type, class, TTL and length
	if n < header {
		return nil, errors.New("short record")
	}
	return buf[header:n], nil
}

// absolute returns name, as a zone file writes it, as an absolute name: "@" is origin, a
// name without the final dot is relative to origin.
func absolute(name, origin string) (string, error) {
	switch {
	case name == "@":
		return origin, nil
	case dns.IsFqdn(name):
	case origin == ".":
		name += "."
	default:
		name += "." + origin
	}
	if _, ok := dns.IsDomainName(name); !ok {
		return "", errors.New("not a domain name")
	}
	return name, nil
}

// parseTTL reads a TTL as zone files write it: seconds, or numbers with the units s, m, h, d
// and w ("1h30m"), at most 2^32-1 seconds.
func parseTTL(s string) (uint32, bool) {
	var total, n uint64
	if s == "" {
		return 0, false
	}
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= '0' && c <= '9':
			n = n*10 + uint64(c-'0')
		case c == 's':
			total, n = total+n, 0
		case c == 'm':
			total, n = total+n*60, 0
		case c == 'h':
			total, n = total+n*3600, 0
		case c == 'd':
			total, n = total+n*86400, 0
		case c == 'w':
			total, n = total+n*604800, 0
		default:
			return 0, false
		}
		if n > 1<<32 || total > 1<<32 {
			return 0, false
		}
	}
	total += n
	if total > 1<<32-1 {
		return 0, false
	}
	return uint32(total), true
}
