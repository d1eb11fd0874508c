package config

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Load reads a document from a YAML or JSON file, applies defaults and validates it. A YAML
// stream of parts is read as the API reads it (DecodeStream).
func Load(path string) (*Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(data)
}

// Parse decodes a YAML or JSON document, applies defaults and validates it. The error, when
// not nil, lists every problem with its path; an Errors value can be recovered with
// errors.As. Unknown fields (each with the closest known field's name, when one is close)
// come first, followed by every problem of content that Validate finds in the document read
// without them. Values of the wrong type and fields set twice stop there: all of them are
// listed, and the content is not checked.
//
// A YAML stream of several documents (parts separated by "---" lines) is merged into one
// configuration by DecodeStream, with its rules and errors, exactly as the API and vigil apply
// read it, then validated: in a stream, an unknown field is an error that stops there, as
// the API has it.
func Parse(data []byte) (*Document, error) {
	if parts := splitStream(data); len(parts) > 1 {
		doc, err := decodeStream(parts)
		if err != nil {
			return nil, err
		}
		if err := doc.Validate(); err != nil {
			return nil, err
		}
		return doc, nil
	}
	doc, unknown, err := decodeLenient(data)
	if err != nil {
		return nil, err
	}
	doc.normalize()
	// Unknown fields first, each with the closest known name, then every problem of content
	// of the document read without them: one misspelt field hides nothing else.
	if err := doc.Validate(); err != nil {
		var es Errors
		if !errors.As(err, &es) {
			return nil, errors.Join(unknown.err(), err)
		}
		unknown = append(unknown, es...)
	}
	if len(unknown) > 0 {
		return nil, unknown
	}
	return doc, nil
}

// Decode reads a YAML or JSON document, applies defaults and normalises it (see normalize),
// without validating it. Unknown fields, values of the wrong type and fields set twice are
// errors, every one of them reported with its path.
func Decode(data []byte) (*Document, error) {
	doc, err := decodeRaw(data)
	if err != nil {
		return nil, err
	}
	doc.normalize()
	return doc, nil
}

// decodeRaw is Decode without normalising: the document as written, with the defaults that
// do not depend on other fields.
func decodeRaw(data []byte) (*Document, error) {
	doc, unknown, err := decodeLenient(data)
	if err != nil {
		return nil, err
	}
	if len(unknown) > 0 {
		return nil, unknown
	}
	return doc, nil
}

// decodeLenient is decodeRaw that reads past unknown fields: it returns the document without
// them, and them as problems. Any other problem of form is an error, with every one of them
// (the unknown fields too).
func decodeLenient(data []byte) (*Document, Errors, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, Errors{{Message: "empty document"}}
		}
		return nil, nil, Errors{{Message: cleanYAMLError(err)}}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, nil, Errors{{Message: "more than one YAML document; put everything in one"}}
	case !errors.Is(err, io.EOF):
		return nil, nil, Errors{{Message: cleanYAMLError(err)}}
	}
	w := fieldWalk{budget: aliasBudget(len(data))}
	w.walk(&root, reflect.TypeFor[Document](), "", 0)
	if len(w.errs) > len(w.unknown) {
		return nil, nil, w.errs
	}
	unknown := w.errs
	w.dropUnknown()
	doc := DefaultDocument()
	if err := root.Decode(&doc); err != nil {
		return nil, nil, append(unknown, FieldError{Message: cleanYAMLError(err)})
	}
	return &doc, unknown, nil
}

// cleanYAMLError turns the YAML library's error into one line without its prefix.
func cleanYAMLError(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	return fixParserLine(strings.TrimPrefix(err.Error(), "yaml: "))
}

// fixParserLine corrects the line number of the YAML library's parser errors, which it counts
// from 0 (its scanner errors count from 1, as editors do). The parser's problems are the
// messages below; a parser error on the first line carries no line at all.
func fixParserLine(msg string) string {
	rest, ok := strings.CutPrefix(msg, "line ")
	if !ok {
		return msg
	}
	num, problem, ok := strings.Cut(rest, ": ")
	line, err := strconv.Atoi(num)
	if !ok || err != nil {
		return msg
	}
	switch problem {
	case "did not find expected <stream-start>", "did not find expected <document start>",
		"did not find expected node content", "did not find expected '-' indicator",
		"did not find expected key", "did not find expected ',' or ']'",
		"did not find expected ',' or '}'", "found undefined tag handle",
		"found duplicate %YAML directive", "found incompatible YAML document",
		"found duplicate %TAG directive":
		return "line " + strconv.Itoa(line+1) + ": " + problem
	}
	return msg
}

// UnmarshalYAML fills in the defaults before the fields the document sets.
func (c *Check) UnmarshalYAML(n *yaml.Node) error {
	type plain Check
	*c = DefaultCheck()
	return n.Decode((*plain)(c))
}

// UnmarshalYAML fills in the defaults before the fields the document sets.
func (z *Zone) UnmarshalYAML(n *yaml.Node) error {
	type plain Zone
	*z = DefaultZone()
	return n.Decode((*plain)(z))
}

// UnmarshalYAML fills in the defaults before the fields the document sets.
func (s *SOA) UnmarshalYAML(n *yaml.Node) error {
	type plain SOA
	*s = DefaultSOA()
	return n.Decode((*plain)(s))
}

// maxDepth bounds the recursion of the field walk on hostile input.
const maxDepth = 32

// minAliasBudget is the least number of values that aliases may expand to in any document.
const minAliasBudget = 100_000

// aliasBudget bounds how many values a document of size bytes may reach through aliases,
// counting each use of an alias anew: one per byte of input, and at least minAliasBudget.
// Values written out cost their bytes, and the request size already bounds those; only
// aliases let a small document name the same subtree many times over (a "billion laughs"
// document of a few kilobytes that expands to millions of values), and this budget stops the
// walk before that costs much. A template named by every check (<<: *defaults) expands to
// far less than one value per byte of the checks that use it, so real configurations of any
// size pass.
func aliasBudget(size int) int { return max(minAliasBudget, size) }

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// fieldWalk checks a YAML tree against the Go types it will decode into, before decoding, so
// that each problem carries its path in the document: every mapping key that names no field,
// and every value of the wrong shape or type. The YAML library's own strict mode does not
// reach through UnmarshalYAML methods, and its type errors carry line numbers, not paths.
type fieldWalk struct {
	errs Errors
	// aliased counts the values reached through aliases; budget bounds it.
	aliased, budget int
	inAlias         int                                      // how many aliases the walk is inside of
	fields          map[reflect.Type]map[string]reflect.Type // yamlFields, once per type
	// unknown are the keys that name no field, with the mapping each is in, in the order
	// found; each is also in errs.
	unknown []unknownKey
}

// unknownKey is a mapping key that names no field.
type unknownKey struct{ mapping, key *yaml.Node }

// dropUnknown removes the unknown keys, and their values, from the tree walked, so that it
// decodes into the rest of the document.
func (w *fieldWalk) dropUnknown() {
	for _, u := range w.unknown {
		c := u.mapping.Content
		for i := 0; i+1 < len(c); i += 2 {
			if c[i] == u.key {
				u.mapping.Content = append(c[:i:i], c[i+2:]...)
				break
			}
		}
	}
}

// walk checks the document at n against type t, at path, depth levels down.
func (w *fieldWalk) walk(n *yaml.Node, t reflect.Type, path string, depth int) {
	if n == nil || depth > maxDepth || w.aliased > w.budget {
		return
	}
	if w.inAlias > 0 {
		if w.aliased++; w.aliased > w.budget {
			w.errs.add("", "document too large: its aliases expand to more than %d values (at most one per byte of the document, or %d), counting each use of an alias anew", w.budget, minAliasBudget)
			return
		}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			w.walk(c, t, path, depth+1)
		}
		return
	case yaml.AliasNode:
		w.inAlias++
		w.walk(n.Alias, t, path, depth+1)
		w.inAlias--
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // null leaves the field as it was: its default
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		if n.Kind != yaml.ScalarNode {
			w.errs.add(path, "want a single value, got %s", kindName(n))
			return
		}
		u := reflect.New(t).Interface().(encoding.TextUnmarshaler)
		if err := u.UnmarshalText([]byte(n.Value)); err != nil {
			w.errs.add(path, "%v", err)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		w.walkStruct(n, t, path, depth)
	case reflect.Slice, reflect.Array:
		w.walkList(n, t, path, depth)
	case reflect.Map:
		w.walkMap(n, t, path, depth)
	default:
		w.scalar(n, t, path)
	}
}

// walkStruct walks a mapping of the fields of struct type t: every key a known field, set once.
func (w *fieldWalk) walkStruct(n *yaml.Node, t reflect.Type, path string, depth int) {
	if n.Kind != yaml.MappingNode && path == "" {
		w.errs.add(path, "the document must be a mapping of fields (regions, quorum, name_servers, checks, zones), got %s", kindName(n))
		return
	}
	if n.Kind != yaml.MappingNode {
		w.errs.add(path, "want a mapping of fields, got %s", kindName(n))
		return
	}
	fields, ok := w.fields[t]
	if !ok {
		if w.fields == nil {
			w.fields = map[reflect.Type]map[string]reflect.Type{}
		}
		fields = yamlFields(t)
		w.fields[t] = fields
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if key.Value == "<<" && key.Kind == yaml.ScalarNode {
			w.walkMerge(val, t, path, depth+1)
			continue
		}
		if key.Kind != yaml.ScalarNode {
			w.errs.add(path, "want field names as keys, got %s as a key", kindName(key))
			continue
		}
		ft, ok := fields[key.Value]
		if !ok {
			if near := closest(key.Value, fields); near != "" {
				w.errs.add(join(path, key.Value), "unknown field; did you mean %s?", near)
			} else {
				w.errs.add(join(path, key.Value), "unknown field")
			}
			w.unknown = append(w.unknown, unknownKey{n, key})
			continue
		}
		if line, dup := seen[key.Value]; dup {
			w.errs.add(join(path, key.Value), "set twice (first on line %d)", line)
			continue
		}
		seen[key.Value] = key.Line
		w.walk(val, ft, join(path, key.Value), depth+1)
	}
}

// walkList walks a sequence of t's elements.
func (w *fieldWalk) walkList(n *yaml.Node, t reflect.Type, path string, depth int) {
	if n.Kind != yaml.SequenceNode {
		w.errs.add(path, "want a list, got %s", kindName(n))
		return
	}
	for i, c := range n.Content {
		w.walk(c, t.Elem(), path+"["+strconv.Itoa(i)+"]", depth+1)
	}
}

// walkMap walks a mapping of plain keys, each set once, to t's elements.
func (w *fieldWalk) walkMap(n *yaml.Node, t reflect.Type, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		w.errs.add(path, "want a mapping, got %s", kindName(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i]
		if key.Kind != yaml.ScalarNode {
			w.errs.add(path, "want plain keys, got %s as a key", kindName(key))
			continue
		}
		if line, dup := seen[key.Value]; dup {
			w.errs.add(join(path, key.Value), "set twice (first on line %d)", line)
			continue
		}
		seen[key.Value] = key.Line
		w.walk(n.Content[i+1], t.Elem(), join(path, key.Value), depth+1)
	}
}

// walkMerge walks the value of a "<<" merge key: a mapping, or a list of mappings.
func (w *fieldWalk) walkMerge(n *yaml.Node, t reflect.Type, path string, depth int) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		w.inAlias++
		defer func() { w.inAlias-- }()
		n = n.Alias
	}
	if n.Kind == yaml.SequenceNode {
		for _, c := range n.Content {
			w.walk(c, t, path, depth+1)
		}
		return
	}
	w.walk(n, t, path, depth)
}

// scalar checks that n decodes into a value of the basic type t, and says what it wanted.
func (w *fieldWalk) scalar(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.ScalarNode {
		w.errs.add(path, "want a single value, got %s", kindName(n))
		return
	}
	if plainScalar(n, t) {
		return
	}
	if err := n.Decode(reflect.New(t).Interface()); err == nil {
		return
	}
	switch t.Kind() {
	case reflect.Bool:
		w.errs.add(path, "want true or false, got %s", shortQuote(n.Value))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.errs.add(path, "want a whole number, got %s", shortQuote(n.Value))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		w.errs.add(path, "want a whole number 0..%d, got %s", uint64(1)<<(t.Bits())-1, shortQuote(n.Value))
	case reflect.Float32, reflect.Float64:
		w.errs.add(path, "want a number, got %s", shortQuote(n.Value))
	default:
		w.errs.add(path, "want a %s, got %s", t.Kind(), shortQuote(n.Value))
	}
}

// plainScalar reports, cheaply, whether n is a plain value that certainly decodes into the
// basic type t: a string, or a decimal number or boolean that fits. Anything else takes the
// YAML library's own (slower) decoding to decide.
func plainScalar(n *yaml.Node, t reflect.Type) bool {
	tag := n.ShortTag()
	switch t.Kind() {
	case reflect.String:
		return tag == "!!str" || tag == "!!int" || tag == "!!float" || tag == "!!bool"
	case reflect.Bool:
		return tag == "!!bool" && (n.Value == "true" || n.Value == "false")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		_, err := strconv.ParseInt(n.Value, 10, t.Bits())
		return tag == "!!int" && err == nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		_, err := strconv.ParseUint(n.Value, 10, t.Bits())
		return tag == "!!int" && err == nil
	case reflect.Float32, reflect.Float64:
		_, err := strconv.ParseFloat(n.Value, t.Bits())
		return (tag == "!!int" || tag == "!!float") && err == nil
	}
	return false
}

// kindName names a node's kind for an error message.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return shortQuote(n.Value)
}

// shortQuote quotes s for an error message, cut to its first 64 bytes.
func shortQuote(s string) string {
	const limit = 64
	if len(s) > limit {
		return strconv.Quote(s[:limit]) + "..."
	}
	return strconv.Quote(s)
}

// yamlFields maps the YAML names of t's fields to their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	m := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = f.Type
	}
	return m
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
