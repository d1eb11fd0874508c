package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// DecodeStream decodes a whole document (YAML or JSON) with its defaults, as Decode does. A
// YAML stream of several documents (parts separated by "---" lines) is one configuration
// given in parts, merged by the rules of decodeStream; its errors say which part they are of.
// The API (PUT /v1/document), vigil apply and Parse (so vigil validate) read documents
// through it, and so agree on what a stream means.
func DecodeStream(body []byte) (*Document, error) {
	parts := splitStream(body)
	if len(parts) <= 1 {
		return Decode(body)
	}
	return decodeStream(parts)
}

// splitStream returns the YAML documents of body: the text between lines that begin with the
// document marker "---" (which YAML reserves at the start of a line: no scalar holds one),
// leaving out parts that hold nothing but blank lines and comments. Each part keeps the line
// of its marker, so that the YAML decoder's line numbers count from it.
func splitStream(body []byte) []streamPart {
	var parts []streamPart
	start, line, startLine := 0, 1, 1
	add := func(end int) {
		if part := body[start:end]; !onlyComments(part) {
			parts = append(parts, streamPart{data: part, line: startLine})
		}
	}
	for i := 0; i < len(body); {
		end := bytes.IndexByte(body[i:], '\n')
		if end < 0 {
			end = len(body)
		} else {
			end += i + 1
		}
		l := body[i:end]
		if bytes.HasPrefix(l, []byte("---")) && (len(l) == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\n' || l[3] == '\r') && i > 0 {
			add(i)
			start, startLine = i, line
		}
		i = end
		line++
	}
	add(len(body))
	return parts
}

// streamPart is one document of a YAML stream and the line of the body it begins on.
type streamPart struct {
	data []byte
	line int
}

// onlyComments reports whether b holds nothing but blank lines, comments and document markers.
func onlyComments(b []byte) bool {
	for l := range bytes.Lines(b) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' && !bytes.HasPrefix(l, []byte("---")) && !bytes.Equal(l, []byte("...")) {
			return false
		}
	}
	return true
}

// decodeStream decodes a configuration given as a stream of YAML documents, one after the
// other, so that only one part's YAML tree is held at a time: the first part holds the
// settings (regions, quorum, name_servers, notifications) and may hold checks and zones; the
// later parts hold checks and zones only. The checks of all parts are one list, as are the
// zones, and a zone named in several parts, each time with the same settings, holds the
// record sets of all of them. A check of a later part without regions gets the first part's,
// as a check in the first part does. A stream is applied as one document, atomically.
func decodeStream(parts []streamPart) (*Document, error) {
	var doc *Document
	type zoneRef struct{ at, part int }
	zoneAt := map[string]zoneRef{}
	bare := DefaultDocument()
	for k, p := range parts {
		part, err := Decode(p.data)
		if err != nil {
			return nil, inPart(err, k, p.line)
		}
		if k == 0 {
			doc = part
		} else {
			settings := *part
			settings.Checks, settings.Zones = nil, nil
			if !reflect.DeepEqual(settings, bare) {
				return nil, Errors{{Message: fmt.Sprintf("document %d of the stream (line %d) sets regions, quorum, name_servers or notifications: only the first document of a stream may", k+1, p.line)}}
			}
			for i := range part.Checks {
				c := &part.Checks[i]
				if len(c.Regions) == 0 && c.Protocol != ProtocolCalculated {
					c.Regions = slices.Clone(doc.Regions)
				}
			}
			doc.Checks = append(doc.Checks, part.Checks...)
		}
		for i := range part.Zones {
			z := &part.Zones[i]
			key := streamZoneKey(z.Name)
			ref, seen := zoneAt[key]
			if seen && ref.part < k {
				first, again := doc.Zones[ref.at], *z
				first.RecordSets, again.RecordSets = nil, nil
				if !reflect.DeepEqual(first, again) {
					return nil, Errors{{Path: fmt.Sprintf("zones[%d]", i), Message: fmt.Sprintf("document %d of the stream (line %d) names zone %s again with other settings: give its settings once, or the same each time", k+1, p.line, z.Name)}}
				}
				doc.Zones[ref.at].RecordSets = append(doc.Zones[ref.at].RecordSets, z.RecordSets...)
				continue
			}
			at := i
			if k > 0 {
				// A zone twice in one part stays twice: validation refuses it as in one document.
				at = len(doc.Zones)
				doc.Zones = append(doc.Zones, *z)
			}
			if !seen {
				zoneAt[key] = zoneRef{at: at, part: k}
			}
		}
	}
	return doc, nil
}

// inPart says which document of a stream a decoding error is of.
func inPart(err error, k, line int) error {
	var es Errors
	if !errors.As(err, &es) {
		return fmt.Errorf("document %d of the stream (from line %d, which its line numbers count as 1): %w", k+1, line, err)
	}
	out := make(Errors, len(es))
	for i, e := range es {
		e.Message = fmt.Sprintf("document %d of the stream (from line %d, which its line numbers count as 1): %s", k+1, line, e.Message)
		out[i] = e
	}
	return out
}

// streamZoneKey is the name by which parts of a stream name the same zone: absolute and in
// lower case.
func streamZoneKey(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	if !strings.HasSuffix(n, ".") {
		n += "."
	}
	return n
}
