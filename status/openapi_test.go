package status

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	vigilapi "github.com/vigil-dns/vigil/api"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/location/history"
	"github.com/vigil-dns/vigil/location/routing"
	"github.com/vigil-dns/vigil/quorum"
	yaml "go.yaml.in/yaml/v3"
)

// openAPI is the part of api/openapi.yaml the tests read.
type openAPI struct {
	OpenAPI    string                          `yaml:"openapi"`
	Paths      map[string]map[string]yaml.Node `yaml:"paths"`
	Components struct {
		Schemas map[string]schema `yaml:"schemas"`
	} `yaml:"components"`
}

type schema struct {
	Properties map[string]yaml.Node `yaml:"properties"`
	AllOf      []schema             `yaml:"allOf"`
	Ref        string               `yaml:"$ref"`
}

func loadOpenAPI(t *testing.T) openAPI {
	t.Helper()
	var spec openAPI
	if err := yaml.Unmarshal(vigilapi.Document(), &spec); err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(spec.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", spec.OpenAPI)
	}
	return spec
}

// TestOpenAPIMatchesRoutes: every route of the status API is documented in api/openapi.yaml
// under the tag "status", and every operation documented with that tag is routed.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	documented, err := vigilapi.Operations("status")
	if err != nil {
		t.Fatal(err)
	}
	a, _, _ := newTestAPI(t, nil, nil)
	var routed []string
	for _, r := range a.Routes() {
		// "/{$}" is the mux's pattern for exactly "/".
		routed = append(routed, r.Method+" "+strings.TrimSuffix(r.Path, "{$}"))
	}
	for _, r := range routed {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not documented in api/openapi.yaml with the tag status", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routed, d) {
			t.Errorf("api/openapi.yaml documents %s, which the status API does not route", d)
		}
	}
	if len(routed) < 13 {
		t.Fatalf("only %d routes", len(routed))
	}
}

// TestOpenAPISchemas: each Status… schema documents exactly the JSON fields of its Go type.
func TestOpenAPISchemas(t *testing.T) {
	spec := loadOpenAPI(t)
	types := map[string]reflect.Type{
		"StatusError":           reflect.TypeFor[ErrorBody](),
		"StatusCounts":          reflect.TypeFor[quorum.Counts](),
		"StatusRegionCell":      reflect.TypeFor[RegionCell](),
		"StatusVerdictSummary":  reflect.TypeFor[VerdictSummary](),
		"StatusVerdictList":     reflect.TypeFor[VerdictList](),
		"StatusOverride":        reflect.TypeFor[OverrideNote](),
		"StatusVote":            reflect.TypeFor[quorum.Vote](),
		"StatusAbsent":          reflect.TypeFor[Absent](),
		"StatusChild":           reflect.TypeFor[quorum.ChildVote](),
		"StatusCheckEvidence":   reflect.TypeFor[CheckEvidence](),
		"StatusHeardChecker":    reflect.TypeFor[quorum.HeardChecker](),
		"StatusCheckerList":     reflect.TypeFor[CheckerList](),
		"StatusCandidate":       reflect.TypeFor[routing.Candidate](),
		"StatusAnswer":          reflect.TypeFor[Answer](),
		"StatusSelfHealth":      reflect.TypeFor[checker.SelfHealth](),
		"StatusTimings":         reflect.TypeFor[Timings](),
		"StatusProbeResult":     reflect.TypeFor[ProbeResult](),
		"StatusProbeStatus":     reflect.TypeFor[ProbeStatus](),
		"StatusProbeList":       reflect.TypeFor[ProbeList](),
		"StatusReadiness":       reflect.TypeFor[Readiness](),
		"StatusWatcher":         reflect.TypeFor[state.WatcherStatus](),
		"StatusNodeInfo":        reflect.TypeFor[NodeInfo](),
		"StatusMember":          reflect.TypeFor[Member](),
		"StatusMemberList":      reflect.TypeFor[MemberList](),
		"StatusZone":            reflect.TypeFor[location.ZoneState](),
		"StatusZoneList":        reflect.TypeFor[ZoneList](),
		"StatusRegionHeard":     reflect.TypeFor[RegionHeard](),
		"StatusDigestCheck":     reflect.TypeFor[DigestCheck](),
		"StatusDigest":          reflect.TypeFor[Digest](),
		"StatusNetworkLocation": reflect.TypeFor[NetworkLocation](),
		"StatusNetworkCell":     reflect.TypeFor[NetworkCell](),
		"StatusNetworkRow":      reflect.TypeFor[NetworkRow](),
		"StatusNetworkView":     reflect.TypeFor[NetworkView](),
		"StatusChange":          reflect.TypeFor[history.Change](),
		"StatusAvailability":    reflect.TypeFor[history.Availability](),
		"StatusHistoryOfCheck":  reflect.TypeFor[history.CheckHistory](),
		"StatusHistoryList":     reflect.TypeFor[HistoryList](),
		"StatusCheckHistory":    reflect.TypeFor[CheckHistory](),
		"StatusAnswerChange":    reflect.TypeFor[history.AnswerChange](),
		"StatusAnswerHistory":   reflect.TypeFor[AnswerHistory](),
		"StatusAnswerList":      reflect.TypeFor[AnswerList](),
		"StatusAnswerSet":       reflect.TypeFor[AnswerSet](),
	}
	for name := range spec.Components.Schemas {
		if _, ok := types[name]; strings.HasPrefix(name, "Status") && !ok {
			t.Errorf("schema %s has no Go type in this test", name)
		}
	}
	for name, typ := range types {
		s, ok := spec.Components.Schemas[name]
		if !ok {
			t.Errorf("no schema %s", name)
			continue
		}
		got := schemaProperties(spec, s)
		want := jsonFields(typ)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("schema %s documents %v; %s has %v", name, got, typ, want)
		}
	}
}

// schemaProperties lists a schema's properties, following allOf and $ref.
func schemaProperties(spec openAPI, s schema) []string {
	if s.Ref != "" {
		return schemaProperties(spec, spec.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")])
	}
	var out []string
	for k := range s.Properties {
		out = append(out, k)
	}
	for _, sub := range s.AllOf {
		out = append(out, schemaProperties(spec, sub)...)
	}
	return out
}

// jsonFields lists the JSON names of t's fields, embedded structs inlined.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}
