package control

import (
	"os"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// TestOpenAPIMatchesRoutes: every route of the API is documented in api/openapi.yaml, and
// every documented operation is routed.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	data, err := os.ReadFile("../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(data, &spec); err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(spec.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", spec.OpenAPI)
	}
	var documented []string
	for path, ops := range spec.Paths {
		for method := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
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
