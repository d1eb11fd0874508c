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

// Load reads a document from a YAML or JSON file, applies defaults and validates it.
func Load(path string) (*Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(data)
}

// Parse decodes a YAML or JSON document, applies defaults and validates it. The error, when
// not nil, lists every problem; an Errors value can be recovered with errors.As.
func Parse(data []byte) (*Document, error) {
	doc, err := Decode(data)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(); err != nil {
		return nil, err
	}
	return doc, nil
}

// Decode reads a YAML or JSON document and applies defaults, without validating it.
// Unknown fields are errors, reported with their paths.
func Decode(data []byte) (*Document, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errors{{Message: "empty document"}}
		}
		return nil, Errors{{Message: cleanYAMLError(err)}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, Errors{{Message: "more than one YAML document; put everything in one"}}
	}
	var unknown Errors
	checkFields(&root, reflect.TypeFor[Document](), "", &unknown, 0)
	if len(unknown) > 0 {
		return nil, unknown
	}
	doc := DefaultDocument()
	if err := root.Decode(&doc); err != nil {
		return nil, Errors{{Message: cleanYAMLError(err)}}
	}
	doc.normalize()
	return &doc, nil
}

// cleanYAMLError turns the YAML library's error into one line without its prefix.
func cleanYAMLError(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
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

// maxDepth bounds the recursion of checkFields on hostile input.
const maxDepth = 32

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// checkFields reports every mapping key that names no field of t, with its path. The YAML
// library's own strict mode does not reach through UnmarshalYAML methods, so Vigil walks the
// tree itself, which also gives each error its path in the document.
func checkFields(n *yaml.Node, t reflect.Type, path string, errs *Errors, depth int) {
	if n == nil || depth > maxDepth {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			checkFields(c, t, path, errs, depth+1)
		}
		return
	case yaml.AliasNode:
		checkFields(n.Alias, t, path, errs, depth+1)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // the decoder reports the type mismatch
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			if key.Value == "<<" {
				checkFields(val, t, path, errs, depth+1)
				continue
			}
			ft, ok := fields[key.Value]
			if !ok {
				errs.add(join(path, key.Value), "unknown field")
				continue
			}
			checkFields(val, ft, join(path, key.Value), errs, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			checkFields(c, t.Elem(), path+"["+strconv.Itoa(i)+"]", errs, depth+1)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkFields(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), errs, depth+1)
		}
	}
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
