package agent_test

import (
	"context"
	"fmt"
	"log"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/regions"
)

// A checker and location in one process on a simulated region, as `vigil dev` wires its
// nodes: the regions network stands in for gossip's transport and the probe dialer, and a
// static document stands in for the control plane.
func Example() {
	doc, err := config.Load("../examples/demo.yaml")
	if err != nil {
		log.Fatal(err)
	}
	nw, _ := regions.NewNetwork(1, doc.Regions...)
	tr, _ := nw.NewTransport("us-east")
	dialer, _ := nw.Dialer("us-east")

	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Region, cfg.DataDir = "us-east-1", "us-east", "/tmp/vigil-example"
	cfg.Transport, cfg.Dialer, cfg.Static = tr, dialer, doc
	cfg.Gossip.Insecure = true // a simulated network in one process: nothing to encrypt against
	cfg.DNSAddr, cfg.HTTPAddr = "127.0.0.1:0", "off"
	cfg.Probe.AllowLoopback = true
	cfg.Registerer = prometheus.NewRegistry()
	n, err := agent.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	info := n.ConfigInfo()
	fmt.Println(info.Source, info.Checks, "checks,", info.Zones, "zone")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a real node runs until its process is told to stop
	if err := n.Run(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: static 4 checks, 1 zone
}
