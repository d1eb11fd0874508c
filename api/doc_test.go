package api

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/internal/docgen"
	yaml "go.yaml.in/yaml/v3"
)

//go:generate env VIGIL_UPDATE_DOCS=1 go test -count=1 -run ^TestAPIReference$ .

// apiReference renders the generated part of docs/api.md from openapi.yaml: one table per
// tag, a row per operation with its summary.
func apiReference(t *testing.T) []byte {
	t.Helper()
	var spec struct {
		Tags []struct {
			Name        string `yaml:"name"`
			Description string `yaml:"description"`
		} `yaml:"tags"`
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(openapi, &spec); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	paths := make([]string, 0, len(spec.Paths))
	for p := range spec.Paths {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	cell := func(s string) string {
		return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
	}
	var b bytes.Buffer
	for _, tag := range spec.Tags {
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\n| operation | what it does |\n| --- | --- |\n", tag.Name, cell(tag.Description))
		n := 0
		for _, p := range paths {
			for _, m := range methods {
				node, ok := spec.Paths[p][m]
				if !ok {
					continue
				}
				var op struct {
					Summary string   `yaml:"summary"`
					Tags    []string `yaml:"tags"`
				}
				if err := node.Decode(&op); err != nil {
					t.Fatalf("openapi.yaml: %s %s: %v", m, p, err)
				}
				if !slices.Contains(op.Tags, tag.Name) {
					continue
				}
				if op.Summary == "" {
					t.Errorf("openapi.yaml: %s %s has no summary", strings.ToUpper(m), p)
				}
				fmt.Fprintf(&b, "| `%s %s` | %s |\n", strings.ToUpper(m), p, cell(op.Summary))
				n++
			}
		}
		if n == 0 {
			t.Errorf("openapi.yaml: the tag %s has no operation", tag.Name)
		}
	}
	return b.Bytes()
}

// TestAPIReference fails when docs/api.md does not list every operation of openapi.yaml
// with its summary (or lists one that is gone); go generate ./api rewrites the list.
func TestAPIReference(t *testing.T) {
	docgen.Section(t, "../docs/api.md", "api", apiReference(t), "go generate ./api")
}
