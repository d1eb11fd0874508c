package netlab

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/vigil-dns/vigil/config"
)

// The demo zone of a real-process network and the port every region's demo target serves on.
const (
	Zone       = "demo.vigil.test"
	targetPort = 8080
)

// RecordValue is the address the demo zone answers for the region numbered index (from 1):
// 192.0.2.<index>, so an answer shows which region a client is sent to.
func RecordValue(index int) netip.Addr { return netip.AddrFrom4([4]byte{192, 0, 2, byte(index)}) }

// CheckID is the ID of the health check of region's demo target.
func CheckID(region string) string { return "web-" + region }

// Document returns the configuration of a network of these regions, as examples/demo.yaml
// but with every check probing its region's demo target in the region's namespace: checks
// every 1s (timeout 500ms, 3 failures to fail, 2 successes to recover), a 5s freshness
// window and a 10s hold; in zone demo.vigil.test the multivalue name "all" answers one
// address per healthy region, "www" fails over from the first region to the second, "api"
// weighs them all, "static" has no check.
func Document(regions []string) (*config.Document, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "regions: [%s]\nquorum:\n  freshness_window: 5s\n  hold: 10s\nchecks:\n", strings.Join(regions, ", "))
	for i, r := range regions {
		fmt.Fprintf(&b, "  - id: %s\n    protocol: http\n    target: {host: %s, port: %d}\n    path: /healthz\n"+
			"    interval: 1s\n    timeout: 500ms\n    failure_threshold: 3\n    success_threshold: 2\n",
			CheckID(r), RegionAddr(i+1), targetPort)
	}
	fmt.Fprintf(&b, "zones:\n  - name: %s\n    ttl: 30\n    record_sets:\n", Zone)
	b.WriteString("      - name: www\n        type: A\n        policy: failover\n        records:\n")
	fmt.Fprintf(&b, "          - {value: %s, health_check: %s, role: primary}\n", RecordValue(1), CheckID(regions[0]))
	fmt.Fprintf(&b, "          - {value: %s, health_check: %s, role: secondary}\n", RecordValue(2), CheckID(regions[1]))
	for _, set := range []string{"api", "all"} {
		policy := map[string]string{"api": "weighted", "all": "multivalue"}[set]
		fmt.Fprintf(&b, "      - name: %s\n        type: A\n        policy: %s\n        records:\n", set, policy)
		for i, r := range regions {
			weight := ""
			if set == "api" {
				weight = fmt.Sprintf(", weight: %d", 10*(len(regions)-i))
			}
			fmt.Fprintf(&b, "          - {value: %s, health_check: %s%s}\n", RecordValue(i+1), CheckID(r), weight)
		}
	}
	fmt.Fprintf(&b, "      - name: static\n        type: A\n        records:\n          - {value: 192.0.2.100}\n")
	doc, err := config.Parse([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("netlab: document of regions %s: %w", strings.Join(regions, ", "), err)
	}
	return doc, nil
}

// QueryNames are the names each location is asked for, in turn: every A record set of the
// demo zone.
func QueryNames() []string {
	var out []string
	for _, n := range []string{"all", "www", "api", "static"} {
		out = append(out, n+"."+Zone+".")
	}
	return out
}
