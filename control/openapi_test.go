package control

import (
	"slices"
	"testing"

	vigilapi "github.com/vigil-dns/vigil/api"
)

// TestOpenAPIMatchesRoutes: every route of the API is documented in api/openapi.yaml, and
// every operation documented with the tag "control" is routed. (Other components, such as
// the status API, document their own operations under their own tags.)
func TestOpenAPIMatchesRoutes(t *testing.T) {
	documented, err := vigilapi.Operations("control")
	if err != nil {
		t.Fatal(err)
	}
	api, err := NewAPI(APIConfig{Node: &Server{}})
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
