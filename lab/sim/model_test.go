package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/regions"
)

// demoDoc is the shape of the demo: one check per region and a majority of them.
func demoDoc() (*config.Document, map[string]string) {
	doc := &config.Document{}
	targets := map[string]string{}
	for _, r := range testRegions {
		doc.Checks = append(doc.Checks, config.Check{ID: "web-" + r, Protocol: config.ProtocolHTTP})
		targets["web-"+r] = r
	}
	doc.Checks = append(doc.Checks, config.Check{ID: "majority", Protocol: config.ProtocolCalculated,
		Children: []string{"web-us-east", "web-eu-west", "web-sa-east"}, MinHealthy: 2})
	return doc, targets
}

// unhealthyAt lists, per location, the checks the model does not expect healthy.
func unhealthyAt(exp map[string]map[string]quorum.State) string {
	var parts []string
	for _, l := range testRegions {
		var bad []string
		for _, id := range sortedKeys(exp[l]) {
			if exp[l][id] != quorum.StateHealthy {
				bad = append(bad, id)
			}
		}
		parts = append(parts, fmt.Sprintf("%s:%s", l, strings.Join(bad, ",")))
	}
	return strings.Join(parts, " ")
}

func TestExpect(t *testing.T) {
	tests := []struct {
		name  string
		steps []Step
		want  string
	}{
		{"no fault", nil, "us-east: eu-west: sa-east:"},
		{"one target down", []Step{{Kind: StepDown, Regions: []string{"us-east"}}},
			"us-east:web-us-east eu-west:web-us-east sa-east:web-us-east"},
		{"two targets down break the majority", []Step{{Kind: StepDown, Regions: []string{"us-east"}}, {Kind: StepDown, Regions: []string{"sa-east"}}},
			"us-east:majority,web-sa-east,web-us-east eu-west:majority,web-sa-east,web-us-east sa-east:majority,web-sa-east,web-us-east"},
		{"down then up", []Step{{Kind: StepDown, Regions: []string{"us-east"}}, {Kind: StepUp, Regions: []string{"us-east"}}},
			"us-east: eu-west: sa-east:"},
		{"São Paulo cut off", []Step{linkStep(regions.Fault{Kind: regions.Cut, A: "sa-east"})},
			"us-east:web-sa-east eu-west:web-sa-east sa-east:majority,web-eu-west,web-us-east"},
		{"one link cut: gossip relays, probes go direct", []Step{linkStep(regions.Fault{Kind: regions.Cut, A: "us-east", B: "eu-west"})},
			"us-east: eu-west: sa-east:"},
		{"cut and heal", []Step{linkStep(regions.Fault{Kind: regions.Cut, A: "sa-east"}), linkStep(regions.Fault{Kind: regions.Heal})},
			"us-east: eu-west: sa-east:"},
		{"cut off and its own target down", []Step{linkStep(regions.Fault{Kind: regions.Cut, A: "sa-east"}), {Kind: StepDown, Regions: []string{"sa-east"}}},
			"us-east:web-sa-east eu-west:web-sa-east sa-east:majority,web-eu-west,web-sa-east,web-us-east"},
	}
	doc, targets := demoDoc()
	for _, tt := range tests {
		f := NewFaults(testRegions)
		for _, st := range tt.steps {
			f.Apply(st)
		}
		if got := unhealthyAt(Expect(doc, testRegions, targets, f)); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}
