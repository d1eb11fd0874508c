package dev

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestDevProbeKinds runs the dev network with a gRPC check of a real grpc-go health server
// and a DNS check of the network's own us-east location, beside the demo's: both are probed
// by every region's checkers through the simulated network, and a service that stops serving
// turns its check unhealthy at every location.
func TestDevProbeKinds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("demo.v1.Orders", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	grpcPort := ln.Addr().(*net.TCPAddr).Port
	dnsPort := freePort(t)

	n := startEdited(t, func(cfg *Config) {
		cfg.Locations["us-east"] = Location{DNS: "127.0.0.1:" + strconv.Itoa(dnsPort), HTTP: "127.0.0.1:0"}
		fast := func(id string, p config.Protocol, port int) config.Check {
			c := config.DefaultCheck()
			c.ID, c.Protocol, c.Target = id, p, config.Target{Host: "127.0.0.1", Port: port}
			c.Interval, c.Timeout = config.Duration(time.Second), config.Duration(500*time.Millisecond)
			c.FailureThreshold, c.SuccessThreshold = 2, 1
			return c
		}
		g := fast("orders-grpc", config.ProtocolGRPC, grpcPort)
		g.GRPC = &config.GRPCProbe{Service: "demo.v1.Orders"}
		d := fast("us-east-dns", config.ProtocolDNS, dnsPort)
		d.DNS = &config.DNSProbe{Name: "static.demo.vigil.test", Answer: "192.0.2.100"}
		cfg.Document.Checks = append(cfg.Document.Checks, g, d)
		if err := cfg.Document.Validate(); err != nil {
			t.Fatalf("the edited demo document: %v", err)
		}
	})
	state := func(id, want string) func() (bool, string) {
		return func() (bool, string) {
			for _, r := range n.cfg.Regions {
				v, ok := n.Verdicts(r)[id]
				if !ok || v.State.String() != want {
					return false, fmt.Sprintf("%s: %s is %s (%s)", r, id, v.State, v.Sentence)
				}
			}
			return true, ""
		}
	}
	eventually(t, 30*time.Second, "the gRPC check healthy everywhere", state("orders-grpc", "healthy"))
	eventually(t, 10*time.Second, "the DNS check healthy everywhere", state("us-east-dns", "healthy"))
	hs.SetServingStatus("demo.v1.Orders", healthpb.HealthCheckResponse_NOT_SERVING)
	// Two failures at a 1s interval, plus evaluation and gossip.
	eventually(t, 10*time.Second, "the gRPC check unhealthy everywhere", state("orders-grpc", "unhealthy"))
	if ok, why := state("us-east-dns", "healthy")(); !ok {
		t.Errorf("the DNS check: %s", why)
	}
}
