package gossip_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/regions"
)

// A checker and a location on a simulated two-region network: the checker publishes, the
// location reads the report (in quorum's vocabulary) with the time it last heard the checker make
// progress.
func Example() {
	nw, _ := regions.NewNetwork(1, "eu", "us")
	key, _ := gossip.ParseKey("dmlnaWwtZXhhbXBsZS1rZXktMzItYnl0ZXMtbG9uZyE=")
	start := func(id, region string, roles gossip.Roles, seeds ...string) *gossip.Pool {
		tr, _ := nw.NewTransport(region)
		n, err := gossip.New(gossip.Config{ID: id, Region: region, Roles: roles, Transport: tr,
			Keys: [][]byte{key}, Seeds: seeds, Registerer: prometheus.NewRegistry()})
		if err != nil {
			panic(err)
		}
		go n.Run(context.Background())
		return n
	}
	eu := start("eu-c0", "eu", gossip.RoleChecker)
	us := start("us-l0", "us", gossip.RoleLocation, eu.Addr())

	_ = eu.Publish("api", gossip.Entry{Status: checker.StatusHealthy, Consecutive: 3, Reason: "http 200"})
	time.Sleep(time.Second)
	for _, r := range us.ReportsFor("api") {
		fmt.Println(r.Checker, r.Region, r.Healthy, r.Reason, r.Fresh(time.Now(), 15*time.Second))
	}
}
