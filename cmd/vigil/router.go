//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/lab/router"
)

// peerFlags collects -peer REGION,SUBNET,ENDPOINT,LATENCY.
type peerFlags []router.Peer

func (p *peerFlags) String() string { return fmt.Sprint(len(*p), " peers") }

func (p *peerFlags) Set(v string) error {
	f := strings.Split(v, ",")
	if len(f) != 4 {
		return errors.New("want REGION,SUBNET,ENDPOINT,LATENCY")
	}
	subnet, err := netip.ParsePrefix(f[1])
	if err != nil {
		return err
	}
	ep, err := netip.ParseAddrPort(f[2])
	if err != nil {
		return err
	}
	lat, err := time.ParseDuration(f[3])
	if err != nil {
		return err
	}
	*p = append(*p, router.Peer{Region: f[0], Subnet: subnet.Masked(), Endpoint: ep, Latency: lat})
	return nil
}

// runRouter runs a region's router of the compose demo (`vigil router`), or sends it a
// fault command (`vigil router ctl ...`).
func runRouter(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "ctl" {
		return runRouterCtl(ctx, args[1:], stdout, stderr)
	}
	fs := newFlagSet("router", stderr)
	region := fs.String("region", "", "this router's region")
	src := fs.String("src", "", "the region's address: source of what the namespace sends to other regions")
	listen := fs.String("listen", "", "UDP address on the routers' network to receive peers' packets on")
	device := fs.String("device", "wan0", "name of the TUN device")
	ctl := fs.String("control", "127.0.0.1:7990", "address of the control API (keep it on loopback)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	var peers peerFlags
	fs.Var(&peers, "peer", "a peer region: REGION,SUBNET,ENDPOINT,LATENCY (repeat for each)")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	var level slog.Level
	srcAddr, err1 := netip.ParseAddr(*src)
	listenAddr, err2 := netip.ParseAddrPort(*listen)
	if err := errors.Join(err1, err2, level.UnmarshalText([]byte(*logLevel))); err != nil || *region == "" || len(peers) == 0 {
		fmt.Fprintf(stderr, "vigil router: -region, -src, -listen and at least one -peer are required (%v)\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	var subnets []netip.Prefix
	for _, p := range peers {
		subnets = append(subnets, p.Subnet)
	}
	dev, err := router.OpenDevice(*device, srcAddr, subnets)
	if err != nil {
		fmt.Fprintf(stderr, "vigil router: %v\n", err)
		return 1
	}
	r, err := router.New(router.Config{Region: *region, Listen: listenAddr, Peers: peers, Logger: log}, dev)
	if err != nil {
		dev.Close()
		fmt.Fprintf(stderr, "vigil router: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", *ctl)
	if err != nil {
		dev.Close()
		fmt.Fprintf(stderr, "vigil router: control API: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: r.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	for _, p := range peers {
		log.Info("router: link", "from", *region, "to", p.Region, "subnet", p.Subnet, "peer", p.Endpoint, "latency", p.Latency)
	}
	if err := r.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "vigil router: %v\n", err)
		return 1
	}
	return 0
}

// runRouterCtl sends one command to a router's control API and prints its answer.
func runRouterCtl(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("router ctl", stderr)
	base := fs.String("control", "http://127.0.0.1:7990", "the router's control API")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: vigil router ctl links | stats | cut R | cut A B | cut-oneway FROM TO | latency A B DUR | loss A B PCT | heal")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := router.Control(ctx, *base, fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "vigil %v\n", err) // the error starts with "router:"
		return 1
	}
	fmt.Fprint(stdout, out)
	return 0
}
