package verify

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	vigilapi "github.com/vigil-dns/vigil/api"
)

// TestOpenAPI: api/openapi.yaml documents GET /v1/verification under the tag verification,
// and each Verification… schema exactly the JSON fields of its Go type.
func TestOpenAPI(t *testing.T) {
	ops, err := vigilapi.Operations("verification")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ops, []string{"GET /v1/verification"}) {
		t.Errorf("verification operations: %v", ops)
	}
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]yaml.Node `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(vigilapi.Document(), &spec); err != nil {
		t.Fatal(err)
	}
	for name, typ := range map[string]reflect.Type{
		"VerificationReport":      reflect.TypeFor[Report](),
		"VerificationLocation":    reflect.TypeFor[LocationReport](),
		"VerificationConvergence": reflect.TypeFor[Convergence](),
		"VerificationPending":     reflect.TypeFor[Pending](),
	} {
		var got, want []string
		for k := range spec.Components.Schemas[name].Properties {
			got = append(got, k)
		}
		for f := range typ.Fields() {
			n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			want = append(want, n)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("schema %s documents %v; %s has %v", name, got, typ, want)
		}
	}
}
