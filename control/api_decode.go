package control

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/vigil-dns/vigil/config"
	yaml "go.yaml.in/yaml/v3"
)

// errUnsupportedType is a body that is neither JSON nor YAML.
var errUnsupportedType = errors.New("control: unsupported content type: send application/json or application/yaml")

// errUnsupportedEncoding is a body in a content coding the API does not decode.
var errUnsupportedEncoding = errors.New("control: unsupported Content-Encoding: send the body as it is, or gzip-compressed with Content-Encoding: gzip")

// errTooLarge is a body over the API's limits (HTTP 413).
var errTooLarge = errors.New("control: request body too large")

// errBadEncoding is a body that does not decode as its Content-Encoding says (HTTP 400).
var errBadEncoding = errors.New("control: request body is not valid gzip")

// readBody checks the content type and reads the body within the API's limits: the bytes
// sent are bounded by the http.MaxBytesReader around r.Body (APIConfig.MaxBodyBytes); a
// gzip-compressed body (Content-Encoding: gzip) is decompressed as it is read, to at most
// maxDecoded bytes. The decompressor holds a fixed window of 32 KiB and its tables whatever
// the body: what a body costs is the bytes it decompresses to, bounded here.
func readBody(r *http.Request, maxDecoded int64) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, errUnsupportedType
	}
	switch mt {
	case "application/json", "application/yaml", "application/x-yaml", "text/yaml":
	default:
		return nil, errUnsupportedType
	}
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, bodyError(err, maxDecoded)
		}
		return body, nil
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, bodyError(err, maxDecoded)
		}
		body, err := io.ReadAll(io.LimitReader(zr, maxDecoded+1))
		if err != nil {
			return nil, bodyError(err, maxDecoded)
		}
		if int64(len(body)) > maxDecoded {
			return nil, fmt.Errorf("%w: the gzip-compressed body decompresses to more than %d bytes, this voter's limit: apply a smaller document and write the rest item by item (PUT /v1/checks/{id}, PUT /v1/zones/{zone}/record_sets/{name}/{type})", errTooLarge, maxDecoded)
		}
		return body, nil
	default:
		return nil, fmt.Errorf("%w (got %q)", errUnsupportedEncoding, enc)
	}
}

// bodyError words an error of reading a body: over the bytes a request may send, not gzip,
// or the connection's.
func bodyError(err error, maxDecoded int64) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return fmt.Errorf("%w: more than %d bytes sent; send it gzip-compressed (Content-Encoding: gzip, as vigil apply does for a large document), up to %d bytes once decompressed: %w", errTooLarge, mbe.Limit, maxDecoded, err)
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %w", errBadEncoding, err)
	}
	var corrupt flate.CorruptInputError
	if errors.As(err, &corrupt) {
		return fmt.Errorf("%w: %w", errBadEncoding, err)
	}
	return fmt.Errorf("control: read request body: %w", err)
}

// decodeDocument decodes a whole document (YAML or JSON) with its defaults; a YAML stream of
// several documents is one configuration given in parts (config.DecodeStream).
func decodeDocument(body []byte) (*config.Document, error) {
	return config.DecodeStream(body)
}

// decodeItem decodes one check, zone or record set by placing it in a document, so that it
// gets the same defaults and unknown-field errors as in a file. wrap builds the document
// around the item's node; prefix is the item's path in that document, removed from errors.
// A body that is one JSON object is placed in the document as text, between open and close
// (JSON is YAML): parsed once, not parsed, re-encoded and parsed again.
func decodeItem(body []byte, prefix string, open, close string, wrap func(item *yaml.Node) *yaml.Node) (*config.Document, error) {
	if isJSONObject(body) {
		data := make([]byte, 0, len(open)+len(body)+len(close))
		data = append(append(append(data, open...), body...), close...)
		return decodeWrapped(data, prefix)
	}
	dec := yaml.NewDecoder(bytes.NewReader(body))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, config.Errors{{Message: "empty body"}}
		}
		return nil, config.Errors{{Message: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, config.Errors{{Message: "more than one document in the body"}}
	}
	item := &root
	if item.Kind == yaml.DocumentNode && len(item.Content) == 1 {
		item = item.Content[0]
	}
	if item.Kind != yaml.MappingNode {
		return nil, config.Errors{{Message: "the body must be an object"}}
	}
	data, err := yaml.Marshal(wrap(item))
	if err != nil {
		return nil, config.Errors{{Message: err.Error()}}
	}
	return decodeWrapped(data, prefix)
}

// isJSONObject reports whether body is exactly one JSON object (with white space around it):
// placed as text inside another document, it can be nothing but one item there.
func isJSONObject(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(body)
}

// decodeWrapped decodes a document that wraps one item at prefix.
func decodeWrapped(data []byte, prefix string) (*config.Document, error) {
	doc, err := config.Decode(data)
	if err != nil {
		var es config.Errors
		if errors.As(err, &es) {
			return nil, stripPrefix(es, prefix)
		}
		return nil, err
	}
	return doc, nil
}

// stripPrefix removes the wrapper's path from every error.
func stripPrefix(es config.Errors, prefix string) config.Errors {
	out := make(config.Errors, len(es))
	for i, e := range es {
		e.Path = strings.TrimPrefix(strings.TrimPrefix(e.Path, prefix), ".")
		out[i] = e
	}
	return out
}

func mapping(kv ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Content: kv}
}

func scalar(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

func seq(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Content: items}
}

// decodeCheck decodes one check: a plain JSON one with encoding/json (decodeCheckJSON),
// any other through the configuration's decoder.
func decodeCheck(body []byte) (*config.Check, error) {
	if c, ok := decodeCheckJSON(body); ok {
		return c, nil
	}
	return decodeCheckDocument(body)
}

// decodeCheckDocument decodes one check by placing it in a document (decodeItem).
func decodeCheckDocument(body []byte) (*config.Check, error) {
	doc, err := decodeItem(body, "checks[0]", `{"checks": [`, `]}`, func(n *yaml.Node) *yaml.Node {
		return mapping(scalar("checks"), seq(n))
	})
	if err != nil {
		return nil, err
	}
	if len(doc.Checks) != 1 {
		return nil, config.Errors{{Message: "the body must be one check"}}
	}
	return &doc.Checks[0], nil
}

// decodeZone decodes one zone with its record sets.
func decodeZone(body []byte) (*config.Zone, error) {
	doc, err := decodeItem(body, "zones[0]", `{"zones": [`, `]}`, func(n *yaml.Node) *yaml.Node {
		return mapping(scalar("zones"), seq(n))
	})
	if err != nil {
		return nil, err
	}
	if len(doc.Zones) != 1 {
		return nil, config.Errors{{Message: "the body must be one zone"}}
	}
	return &doc.Zones[0], nil
}

// decodeRecordSet decodes one record set of zone, so that relative names are relative to it.
func decodeRecordSet(body []byte, zone string) (*config.RecordSet, error) {
	name, err := json.Marshal(zone)
	if err != nil {
		return nil, config.Errors{{Message: err.Error()}}
	}
	doc, err := decodeItem(body, "zones[0].record_sets[0]", `{"zones": [{"name": `+string(name)+`, "record_sets": [`, `]}]}`, func(n *yaml.Node) *yaml.Node {
		return mapping(scalar("zones"), seq(mapping(scalar("name"), scalar(zone), scalar("record_sets"), seq(n))))
	})
	if err != nil {
		return nil, err
	}
	if len(doc.Zones) != 1 || len(doc.Zones[0].RecordSets) != 1 {
		return nil, config.Errors{{Message: "the body must be one record set"}}
	}
	return &doc.Zones[0].RecordSets[0], nil
}

// decodeStrict decodes a JSON request body into out, refusing fields out does not have.
func decodeStrict(body []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}
