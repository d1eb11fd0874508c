package control

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// The raft log's binary encoding of a command (version 1). An entry written this way starts
// with binaryMagic (a byte no JSON document starts with) and the version byte; an entry
// written by an earlier release is JSON and starts with '{'. A voter reads both, whatever
// its leader writes, so a log written before an upgrade still applies.
//
// After the two bytes come fields, each a tag byte and its value, in any order, each at most
// once, and a last 0 byte. Strings and byte strings are a uvarint length and the bytes, integers zigzag varints,
// a float its IEEE bits (8 bytes, little-endian), a list or map a uvarint of its length plus
// one (0: nil, so that nil and empty stay apart as they do in JSON). The commands the API
// writes item by item (a check with its audit record, a delete, a batch of them) are wholly
// binary; the rest of a command (a zone, a record set, a document, keys...) is carried as the
// JSON object of those fields, as the JSON encoding writes them. A tag this version does not
// know is an error: a later version that adds one writes another version number, unless
// the tag is written only for what the release before could not express (tagProbe).
//
// A leader writes this encoding only once every voter of the raft configuration reads it
// (peerCodecs, transport.go): a voter of the release before cannot.
const (
	binaryMagic   = 0xF5
	binaryVersion = 1
)

// Field tags of the binary encoding.
const (
	tagOp       = 1  // string
	tagCreate   = 2  // no value: true
	tagCheck    = 3  // a check (appendCheck)
	tagAudit    = 4  // an audit record (appendAudit)
	tagID       = 5  // string
	tagZoneName = 6  // string
	tagName     = 7  // string
	tagType     = 8  // string
	tagBatch    = 9  // uvarint count, then each command as a byte string, in either encoding
	tagJSON     = 10 // byte string: the JSON object of the command's other fields
	tagEnd      = 0  // the last byte of every command: a truncated one is refused
	// tagProbe is a uvarint of the check's probe switches that came after the check's
	// layout of version 1 (probeKeepAlive, probeHTTP2), written only when one is set: a
	// check without them is encoded as before, which a voter of the release before reads,
	// and one with them is refused by that voter (a tag it does not know) rather than
	// applied without them.
	tagProbe = 11
)

// The bits of tagProbe's value.
const (
	probeKeepAlive = 1 << iota // config.Check.KeepAlive
	probeHTTP2                 // config.Check.HTTP2
	probeAll       = probeKeepAlive | probeHTTP2
)

// probeBits returns the tagProbe bits of c.
func probeBits(c *config.Check) uint64 {
	var bits uint64
	if c.KeepAlive {
		bits |= probeKeepAlive
	}
	if c.HTTP2 {
		bits |= probeHTTP2
	}
	return bits
}

// isBinaryCommand reports whether data is a command in the binary encoding.
func isBinaryCommand(data []byte) bool { return len(data) > 0 && data[0] == binaryMagic }

// encodeCommandBinary encodes a command in the binary encoding.
func encodeCommandBinary(cmd *state.Command) ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, binaryMagic, binaryVersion)
	b = appendTagString(b, tagOp, string(cmd.Op))
	if cmd.Create {
		b = append(b, tagCreate)
	}
	if cmd.Check != nil {
		b = append(b, tagCheck)
		b = appendCheck(b, cmd.Check)
		if bits := probeBits(cmd.Check); bits != 0 {
			b = append(b, tagProbe)
			b = binary.AppendUvarint(b, bits)
		}
	}
	if cmd.Audit != nil {
		b = append(b, tagAudit)
		var err error
		if b, err = appendAudit(b, cmd.Audit); err != nil {
			return nil, fmt.Errorf("control: encode command: %w", err)
		}
	}
	if cmd.ID != "" {
		b = appendTagString(b, tagID, cmd.ID)
	}
	if cmd.ZoneName != "" {
		b = appendTagString(b, tagZoneName, cmd.ZoneName)
	}
	if cmd.Name != "" {
		b = appendTagString(b, tagName, cmd.Name)
	}
	if cmd.Type != "" {
		b = appendTagString(b, tagType, string(cmd.Type))
	}
	if cmd.Batch != nil {
		b = append(b, tagBatch)
		b = binary.AppendUvarint(b, uint64(len(cmd.Batch)))
		for _, sub := range cmd.Batch {
			b = appendBytes(b, sub)
		}
	}
	rest := *cmd
	rest.Op, rest.Create, rest.Check, rest.Audit, rest.ID, rest.ZoneName, rest.Name, rest.Type, rest.Batch =
		"", false, nil, nil, "", "", "", "", nil
	if !rest.IsEmpty() {
		js, err := json.Marshal(&rest)
		if err != nil {
			return nil, fmt.Errorf("control: encode command: %w", err)
		}
		b = append(b, tagJSON)
		b = appendBytes(b, js)
	}
	return append(b, tagEnd), nil
}

// encodeBatchBinary encodes a batch of encoded commands (in either encoding) as one entry.
func encodeBatchBinary(subs [][]byte) []byte {
	size := 16
	for _, s := range subs {
		size += len(s) + binary.MaxVarintLen32
	}
	b := make([]byte, 0, size)
	b = append(b, binaryMagic, binaryVersion)
	b = appendTagString(b, tagOp, string(state.OpBatch))
	b = append(b, tagBatch)
	b = binary.AppendUvarint(b, uint64(len(subs)))
	for _, s := range subs {
		b = appendBytes(b, s)
	}
	return append(b, tagEnd)
}

// decodeCommand decodes a command of the raft log in either encoding into c.
func decodeCommand(data []byte, c *state.Command) error {
	if !isBinaryCommand(data) {
		return json.Unmarshal(data, c)
	}
	d := decoder{b: data}
	if d.byte() != binaryMagic {
		return errors.New("not a binary command")
	}
	if v := d.byte(); v != binaryVersion {
		return fmt.Errorf("binary command of version %d, this voter reads version %d (upgrade it)", v, binaryVersion)
	}
	var seen uint32
	var probe uint64
	for d.err == nil {
		tag := d.byte()
		if tag == tagEnd && d.err == nil {
			if len(d.b) > 0 {
				return errors.New("binary command: bytes after its end")
			}
			break
		}
		if tag >= 32 || seen&(1<<tag) != 0 {
			return fmt.Errorf("binary command: field %d unknown or repeated", tag)
		}
		seen |= 1 << tag
		switch tag {
		case tagOp:
			c.Op = state.Op(d.string())
		case tagCreate:
			c.Create = true
		case tagCheck:
			c.Check = new(config.Check)
			d.check(c.Check)
		case tagAudit:
			c.Audit = new(state.AuditInfo)
			d.audit(c.Audit)
		case tagID:
			c.ID = d.string()
		case tagZoneName:
			c.ZoneName = d.string()
		case tagName:
			c.Name = d.string()
		case tagType:
			c.Type = config.RecordType(d.string())
		case tagBatch:
			n := d.count(1)
			c.Batch = make([]json.RawMessage, 0, n)
			for range n {
				c.Batch = append(c.Batch, d.bytes())
			}
		case tagJSON:
			if js := d.bytes(); d.err == nil {
				if err := decodeRest(js, c); err != nil {
					return err
				}
			}
		case tagProbe:
			probe = d.uvarint()
			if d.err == nil && (probe == 0 || probe&^probeAll != 0) {
				return fmt.Errorf("binary command: probe switches %#x unknown", probe)
			}
		default:
			return fmt.Errorf("binary command: field %d unknown", tag)
		}
	}
	if d.err != nil {
		return fmt.Errorf("binary command: %w", d.err)
	}
	if probe != 0 {
		if c.Check == nil {
			return errors.New("binary command: probe switches without a check")
		}
		c.Check.KeepAlive = probe&probeKeepAlive != 0
		c.Check.HTTP2 = probe&probeHTTP2 != 0
	}
	return nil
}

// decodeRest sets the fields of c that its binary encoding carries as JSON (tagJSON) from
// js, which may hold no other.
func decodeRest(js []byte, c *state.Command) error {
	var rest state.Command
	if err := json.Unmarshal(js, &rest); err != nil {
		return fmt.Errorf("binary command: %w", err)
	}
	c.Zone, c.RecordSet, c.Document, c.Voter = rest.Zone, rest.RecordSet, rest.Document, rest.Voter
	c.ZoneKeys, c.TSIGKey, c.Notify, c.Override, c.Notifications = rest.ZoneKeys, rest.TSIGKey, rest.Notify, rest.Override, rest.Notifications
	if rest.Op != "" || rest.Create || rest.Check != nil || rest.Audit != nil || rest.ID != "" ||
		rest.ZoneName != "" || rest.Name != "" || rest.Type != "" || rest.Batch != nil {
		return errors.New("binary command: a field of its own in its JSON part")
	}
	return nil
}

func appendTagString(b []byte, tag byte, s string) []byte {
	return appendString(append(b, tag), s)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBytes(b, s []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendLen appends a list's or map's length plus one, 0 for nil.
func appendLen(b []byte, isNil bool, n int) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

func appendStrings(b []byte, l []string) []byte {
	b = appendLen(b, l == nil, len(l))
	for _, s := range l {
		b = appendString(b, s)
	}
	return b
}

// binDNSProbe and binGRPCProbe are config's probes, converted from them: a field added
// there and not here does not compile.
type (
	binDNSProbe struct {
		Name      string
		Type      config.RecordType
		Rcode     string
		Answer    string
		Recursion bool
		Transport string
	}
	binGRPCProbe struct {
		Service string
		TLS     bool
	}
)

// appendCheck appends every field of c but the probe switches (tagProbe), in the order of
// config.Check (TestBinaryCheckEveryField
// sets every field, by reflection, and fails when one does not come back; a field added to
// config.Check and not to logCheck does not compile).
func appendCheck(b []byte, c *config.Check) []byte {
	_ = logCheck(*c)
	b = appendString(b, c.ID)
	b = appendString(b, string(c.Protocol))
	b = appendString(b, c.Target.Host)
	b = binary.AppendVarint(b, int64(c.Target.Port))
	b = binary.AppendVarint(b, int64(c.IPVersion))
	b = appendString(b, c.Path)
	b = appendString(b, c.Method)
	b = appendString(b, c.HostHeader)
	b = appendString(b, c.SNI)
	b = appendLen(b, c.Headers == nil, len(c.Headers))
	if len(c.Headers) > 0 {
		keys := make([]string, 0, len(c.Headers))
		for k := range c.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = appendString(appendString(b, k), c.Headers[k])
		}
	}
	b = appendLen(b, c.ExpectStatus == nil, len(c.ExpectStatus))
	for _, r := range c.ExpectStatus {
		b = binary.AppendVarint(binary.AppendVarint(b, int64(r.Low)), int64(r.High))
	}
	b = appendString(b, c.BodyMatch)
	b = appendBool(b, c.TLSVerify)
	b = appendBool(b, c.FollowRedirects)
	// KeepAlive and HTTP2 follow the check, under tagProbe.
	b = appendString(b, c.TLSCA)
	b = appendBool(b, c.GRPC != nil)
	if c.GRPC != nil {
		p := binGRPCProbe(*c.GRPC)
		b = appendBool(appendString(b, p.Service), p.TLS)
	}
	b = appendBool(b, c.DNS != nil)
	if c.DNS != nil {
		p := binDNSProbe(*c.DNS)
		b = appendString(b, p.Name)
		b = appendString(b, string(p.Type))
		b = appendString(b, p.Rcode)
		b = appendString(b, p.Answer)
		b = appendBool(b, p.Recursion)
		b = appendString(b, p.Transport)
	}
	b = binary.AppendVarint(b, int64(c.Interval))
	b = binary.AppendVarint(b, int64(c.Timeout))
	b = binary.AppendVarint(b, int64(c.FailureThreshold))
	b = binary.AppendVarint(b, int64(c.SuccessThreshold))
	b = appendStrings(b, c.Regions)
	b = appendBool(b, c.AllowFewerRegions)
	b = binary.AppendVarint(b, int64(c.CheckersPerRegion))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.HealthyThreshold))
	b = binary.AppendVarint(b, int64(c.MinReporters))
	b = appendBool(b, c.Inverted)
	b = appendBool(b, c.Disabled)
	b = appendStrings(b, c.Children)
	b = binary.AppendVarint(b, int64(c.MinHealthy))
	return b
}

// appendAudit appends an audit record; its time as time.Time's own binary form (instant
// and zone offset).
func appendAudit(b []byte, a *state.AuditInfo) ([]byte, error) {
	t, err := a.Time.MarshalBinary()
	if err != nil {
		return nil, err
	}
	b = appendBytes(b, t)
	b = appendString(b, a.Token)
	b = appendString(b, a.Via)
	b = appendString(b, a.Method)
	b = appendString(b, a.Path)
	b = appendString(b, a.Summary)
	return b, nil
}

// decoder reads the binary encoding; the first error stops it (every read after returns
// zero values).
type decoder struct {
	b   []byte
	err error
}

var errShort = errors.New("truncated")

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail(errShort)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int() int {
	v := d.varint()
	if int64(int(v)) != v {
		d.fail(errors.New("integer out of range"))
		return 0
	}
	return int(v)
}

// bytes returns the next byte string, sharing the decoded entry's memory.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail(errors.New("a bool is 0 or 1"))
	return false
}

// count reads a count of items of at least minSize bytes each, bounded by what is left.
func (d *decoder) count(minSize int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/minSize) {
		d.fail(errShort)
		return 0
	}
	return int(n)
}

// length reads a list's or map's length plus one: nil reports a nil list.
func (d *decoder) length(minSize int) (n int, isNil bool) {
	v := d.uvarint()
	if v == 0 || d.err != nil {
		return 0, true
	}
	if v-1 > uint64(len(d.b)/minSize) {
		d.fail(errShort)
		return 0, true
	}
	return int(v - 1), false
}

func (d *decoder) strings() []string {
	n, isNil := d.length(1)
	if isNil {
		return nil
	}
	l := make([]string, n)
	for i := range l {
		l[i] = d.string()
	}
	return l
}

func (d *decoder) check(c *config.Check) {
	c.ID = d.string()
	c.Protocol = config.Protocol(d.string())
	c.Target.Host = d.string()
	c.Target.Port = d.int()
	c.IPVersion = d.int()
	c.Path = d.string()
	c.Method = d.string()
	c.HostHeader = d.string()
	c.SNI = d.string()
	if n, isNil := d.length(2); !isNil {
		c.Headers = make(map[string]string, n)
		for range n {
			k := d.string()
			c.Headers[k] = d.string()
		}
	}
	if n, isNil := d.length(2); !isNil {
		c.ExpectStatus = make([]config.StatusRange, n)
		for i := range c.ExpectStatus {
			c.ExpectStatus[i] = config.StatusRange{Low: d.int(), High: d.int()}
		}
	}
	c.BodyMatch = d.string()
	c.TLSVerify = d.bool()
	c.FollowRedirects = d.bool()
	c.TLSCA = d.string()
	if d.bool() {
		c.GRPC = &config.GRPCProbe{Service: d.string(), TLS: d.bool()}
	}
	if d.bool() {
		c.DNS = &config.DNSProbe{Name: d.string(), Type: config.RecordType(d.string()), Rcode: d.string(),
			Answer: d.string(), Recursion: d.bool(), Transport: d.string()}
	}
	c.Interval = config.Duration(d.varint())
	c.Timeout = config.Duration(d.varint())
	c.FailureThreshold = d.int()
	c.SuccessThreshold = d.int()
	c.Regions = d.strings()
	c.AllowFewerRegions = d.bool()
	c.CheckersPerRegion = d.int()
	if len(d.b) < 8 {
		d.fail(errShort)
		return
	}
	c.HealthyThreshold = math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	c.MinReporters = d.int()
	c.Inverted = d.bool()
	c.Disabled = d.bool()
	c.Children = d.strings()
	c.MinHealthy = d.int()
}

func (d *decoder) audit(a *state.AuditInfo) {
	t := d.bytes()
	if d.err == nil {
		var tt time.Time
		if err := tt.UnmarshalBinary(t); err != nil {
			d.fail(err)
			return
		}
		a.Time = tt
	}
	a.Token = d.string()
	a.Via = d.string()
	a.Method = d.string()
	a.Path = d.string()
	a.Summary = d.string()
}
