package cluster

import (
	"fmt"
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/agent"
)

// The layout names every region's nodes by their roles and starts the nodes with a location
// first, region by region, so that a location hears the checkers' first reports.
func TestLayout(t *testing.T) {
	roles := []agent.Roles{agent.RoleChecker, agent.RoleLocation, agent.RoleChecker | agent.RoleLocation, agent.RoleChecker, agent.RoleLocation}
	var got []string
	for _, s := range layout([]string{"a", "b"}, roles) {
		got = append(got, fmt.Sprintf("%s/%s", s.id, s.roles))
	}
	want := []string{
		"a-location/location", "a-node-1/checker+location", "a-location-2/location",
		"b-location/location", "b-node-1/checker+location", "b-location-2/location",
		"a-checker-1/checker", "a-checker-2/checker", "b-checker-1/checker", "b-checker-2/checker",
	}
	if !slices.Equal(got, want) {
		t.Errorf("layout:\n got %v\nwant %v", got, want)
	}
}
