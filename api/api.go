// Package api embeds the OpenAPI document of Vigil's HTTP APIs and reads its operations, so
// that each API's tests check their routes against it. The document describes the control API
// and the status API.
package api

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

//go:embed openapi.yaml
var openapi []byte

// Document returns a copy of api/openapi.yaml as built into the binary.
func Document() []byte { return slices.Clone(openapi) }

// methods are the OpenAPI operation keys of a path item.
var methods = []string{"get", "put", "post", "delete", "patch", "head", "options"}

// Operations lists the operations documented with tag, as "METHOD /path" (e.g. "GET
// /v1/verdicts"), sorted.
func Operations(tag string) ([]string, error) {
	var spec struct {
		OpenAPI string                          `yaml:"openapi"`
		Paths   map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(openapi, &spec); err != nil {
		return nil, fmt.Errorf("api: openapi.yaml: %w", err)
	}
	if !strings.HasPrefix(spec.OpenAPI, "3.") {
		return nil, fmt.Errorf("api: openapi.yaml: version %q, want 3.x", spec.OpenAPI)
	}
	var out []string
	for path, ops := range spec.Paths {
		for method, op := range ops {
			if !slices.Contains(methods, method) {
				continue
			}
			var o struct {
				Tags []string `yaml:"tags"`
			}
			if err := op.Decode(&o); err != nil {
				return nil, fmt.Errorf("api: openapi.yaml: %s %s: %w", method, path, err)
			}
			if slices.Contains(o.Tags, tag) {
				out = append(out, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
