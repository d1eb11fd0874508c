package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/vigil-dns/vigil/config"
)

// A check written as JSON is most writes the API takes (`vigil load writes`, scripts,
// Terraform-like clients). Decoding it through the configuration's YAML decoder (decodeItem)
// parses it into YAML nodes, walks them for unknown fields and decodes them by reflection:
// about 100 µs of the leader's CPU per write on this project's machine, as much as one
// voter's whole apply of it. decodeCheckJSON decodes the plain cases with encoding/json
// instead, and takes only bodies whose result is certainly the YAML decoder's: every key
// spelled as the YAML decoder knows it, none twice, no null, only printable ASCII and line
// breaks, no escapes, no number in an exponent form or a negative zero, no grpc or dns probe;
// and a check that the configuration's normalisation would not change (its port set, its
// method in capitals, its regions either absent or listed). Anything else, an error of any
// kind included, goes the YAML way, which words every error as it always has.
// TestDecodeCheckJSONAsYAML and FuzzDecodeCheckJSON compare the two paths.

// jsonShape is the form of the value a key of a fast check body holds.
type jsonShape int

const (
	shapeScalar  jsonShape = iota // a string, number or boolean
	shapeTarget                   // an object of host and port
	shapeHeaders                  // an object of any keys, each a string
	shapeStrings                  // an array of strings
)

// checkFastFields returns the keys of a check a fast body may set, with their shapes: every
// field of config.Check whose YAML and JSON names agree, except the probes of grpc and dns.
// Computed once from the struct's tags.
var checkFastFields = sync.OnceValue(func() map[string]jsonShape {
	out := map[string]jsonShape{}
	t := reflect.TypeFor[config.Check]()
	for i := range t.NumField() {
		f := t.Field(i)
		y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if y == "" || y != j || y == "grpc" || y == "dns" {
			continue
		}
		switch {
		case f.Type == reflect.TypeFor[config.Target]():
			out[y] = shapeTarget
		case f.Type.Kind() == reflect.Map:
			out[y] = shapeHeaders
		case f.Type.Kind() == reflect.Slice:
			out[y] = shapeStrings
		case f.Type.Kind() == reflect.Pointer || f.Type.Kind() == reflect.Struct:
			continue // a nested form this path does not know
		default:
			out[y] = shapeScalar
		}
	}
	return out
})

// decodeCheckJSON decodes a check body that is plain JSON without the YAML parser; ok is
// false when the body is not plain enough, and the caller takes the YAML path.
func decodeCheckJSON(body []byte) (c *config.Check, ok bool) {
	if !plainJSONCheck(body) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	ch := config.DefaultCheck()
	if err := dec.Decode(&ch); err != nil {
		return nil, false
	}
	switch ch.Protocol {
	case config.ProtocolHTTP, config.ProtocolHTTPS, config.ProtocolTCP, config.ProtocolGRPC:
	default:
		return nil, false
	}
	if ch.Target.Port == 0 || ch.Method != strings.ToUpper(ch.Method) || (ch.Regions != nil && len(ch.Regions) == 0) ||
		ch.GRPC != nil || ch.DNS != nil {
		return nil, false
	}
	return &ch, true
}

// plainJSONCheck reports whether body is one JSON object, printable ASCII without escapes
// (line breaks allowed), whose keys
// are those of checkFastFields (each once, each value of its shape), with no null and no
// number that YAML could read otherwise than JSON.
func plainJSONCheck(body []byte) bool {
	for _, b := range body {
		// Printable ASCII and line breaks only: YAML refuses control characters (DEL among
		// them) that JSON takes, and reads tabs and escapes by rules of its own.
		if (b < ' ' && b != '\n' && b != '\r') || b >= 0x7f || b == '\\' {
			return false
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if d, err := dec.Token(); err != nil || d != json.Delim('{') {
		return false
	}
	fields := checkFastFields()
	seen := map[string]bool{}
	for dec.More() {
		key, ok := nextKey(dec, seen)
		if !ok {
			return false
		}
		shape, known := fields[key]
		if !known {
			return false
		}
		switch shape {
		case shapeScalar:
			if !plainScalar(dec) {
				return false
			}
		case shapeStrings:
			if !plainList(dec) {
				return false
			}
		case shapeTarget, shapeHeaders:
			if !plainObject(dec, shape) {
				return false
			}
		}
	}
	if d, err := dec.Token(); err != nil || d != json.Delim('}') {
		return false
	}
	_, err := dec.Token()
	return errors.Is(err, io.EOF)
}

// nextKey reads an object's next key, which must not be in seen, and adds it.
func nextKey(dec *json.Decoder, seen map[string]bool) (string, bool) {
	t, err := dec.Token()
	key, isString := t.(string)
	if err != nil || !isString || seen[key] {
		return "", false
	}
	seen[key] = true
	return key, true
}

// plainScalar reads a string, boolean or number that YAML reads as JSON does: a number
// without an exponent, and not a negative zero (which YAML reads as 0).
func plainScalar(dec *json.Decoder) bool {
	t, err := dec.Token()
	if err != nil {
		return false
	}
	switch v := t.(type) {
	case string, bool:
		return true
	case json.Number:
		s := string(v)
		if strings.ContainsAny(s, "eE") {
			return false
		}
		f, err := strconv.ParseFloat(s, 64)
		return err == nil && !(f == 0 && strings.HasPrefix(s, "-"))
	}
	return false
}

// plainList reads an array of strings.
func plainList(dec *json.Decoder) bool {
	if d, err := dec.Token(); err != nil || d != json.Delim('[') {
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		if _, isString := t.(string); err != nil || !isString {
			return false
		}
	}
	d, err := dec.Token()
	return err == nil && d == json.Delim(']')
}

// plainObject reads a target (host and port, scalars) or headers (any keys, strings), each
// key once.
func plainObject(dec *json.Decoder, shape jsonShape) bool {
	if d, err := dec.Token(); err != nil || d != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		key, ok := nextKey(dec, seen)
		if !ok || (shape == shapeTarget && key != "host" && key != "port") { // config.Target's names
			return false
		}
		if shape == shapeHeaders {
			t, err := dec.Token()
			if _, isString := t.(string); err != nil || !isString {
				return false
			}
		} else if !plainScalar(dec) {
			return false
		}
	}
	d, err := dec.Token()
	return err == nil && d == json.Delim('}')
}
