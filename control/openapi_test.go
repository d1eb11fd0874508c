package control

import (
	"os"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// TestOpenAPIMatchesRoutes: every route of the API is documented in api/openapi.yaml, and
// every operation documented with the tag "control" is routed. (Other components, such as
// the status API, document their own operations under their own tags.)
func TestOpenAPIMatchesRoutes(t *testing.T) {
	data, err := os.ReadFile("../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		OpenAPI string                          `yaml:"openapi"`
		Paths   map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(data, &spec); err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(spec.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", spec.OpenAPI)
	}
	var documented []string
	for path, ops := range spec.Paths {
		for method, op := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
			default:
				continue
			}
			var o struct {
				Tags []string `yaml:"tags"`
			}
			if err := op.Decode(&o); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			if slices.Contains(o.Tags, "control") {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	api, err := NewAPI(APIConfig{Node: &Node{}})
	if err != nil {
		t.Fatal(err)
	}
	var routed []string
	for _, r := range api.Routes() {
		routed = append(routed, r.Method+" "+r.Path)
	}
	for _, r := range routed {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not documented in api/openapi.yaml", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routed, d) {
			t.Errorf("api/openapi.yaml documents %s, which the API does not route", d)
		}
	}
	if len(routed) == 0 {
		t.Fatal("no routes")
	}
}
