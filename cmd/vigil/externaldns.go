package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vigil-dns/vigil/externaldns"
	"github.com/vigil-dns/vigil/internal/httpguard"
)

// runExternalDNS serves the ExternalDNS webhook provider: ExternalDNS (--provider=webhook)
// sends it the records it wants, and it writes them to the control plane.
func runExternalDNS(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("externaldns", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8888", "address the webhook listens on (ExternalDNS's --webhook-provider-url); keep it on loopback or the pod's network")
	var cf clientFlags
	cf.register(fs)
	zones := fs.String("zone", "", "comma-separated zones the provider manages (they must exist in Vigil)")
	owner := fs.String("owner", externaldns.DefaultOwner, "the managed_by mark of the record sets the provider creates; it changes and deletes only record sets with this mark")
	allowedHosts := fs.String("allowed-hosts", "", "comma-separated host names a request's Host header may name besides loopback addresses, localhost and the -listen host (the name in ExternalDNS's --webhook-provider-url)")
	metricsListen := fs.String("metrics-listen", "", "address to serve the provider's Prometheus metrics on (GET /metrics); empty: none")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	if *zones == "" {
		fmt.Fprintln(stderr, "vigil externaldns: -zone is required")
		return 2
	}
	cf.resolve(fs)
	token, err := cf.token()
	if err != nil {
		return usageErr(stderr, "externaldns", err)
	}
	voters, err := cf.voters()
	if err != nil {
		return usageErr(stderr, "externaldns", err)
	}
	hc, err := cf.httpClient()
	if err != nil {
		return usageErr(stderr, "externaldns", err)
	}
	hc.Timeout = 30 * time.Second // as the provider's own client: a write never hangs ExternalDNS
	log := slog.New(slog.NewTextHandler(stderr, nil))
	hosts := webhookHosts(*listen, *allowedHosts, log)
	reg := prometheus.NewRegistry()
	p, err := externaldns.New(externaldns.Config{Voters: voters, Token: token, Client: hc, Zones: splitList(*zones),
		Owner: *owner, AllowedHosts: hosts, Registerer: reg, Logger: log})
	if err != nil {
		return usageErr(stderr, "externaldns", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "vigil externaldns: %v\n", err)
		return 1
	}
	srv := httpguard.Server(p, httpguard.Limits{})
	fmt.Fprintf(stdout, "vigil externaldns: webhook on http://%s for %s, owner %s\n", ln.Addr(), *zones, *owner)
	done := make(chan error, 2)
	go func() { done <- srv.Serve(ln) }()
	var msrv *http.Server
	if *metricsListen != "" {
		if msrv, err = serveMetrics(*metricsListen, reg, done); err != nil {
			_ = srv.Close()
			fmt.Fprintf(stderr, "vigil externaldns: metrics: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "vigil externaldns: metrics on http://%s/metrics\n", msrv.Addr)
	}
	defer func() {
		if msrv != nil {
			_ = msrv.Close()
		}
	}()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return 0
	case err := <-done:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "vigil externaldns: %v\n", err)
			return 1
		}
		return 0
	}
}

// webhookHosts returns the host names a request's Host header may name besides loopback and
// localhost: those of -allowed-hosts, and the host of the listen address, which the address
// ExternalDNS is given names, unless it is unspecified (every address).
func webhookHosts(listen, allowed string, log *slog.Logger) []string {
	hosts := splitList(allowed)
	if h, _, err := net.SplitHostPort(listen); err == nil && h != "" {
		if a, err := netip.ParseAddr(h); err != nil || !a.IsUnspecified() {
			hosts = append(hosts, h)
		} else {
			log.Warn("externaldns: the webhook listens on every address; only loopback, localhost and -allowed-hosts are answered", "listen", listen)
		}
	}
	return hosts
}

// serveMetrics serves reg's metrics (GET /metrics) on addr and sends the end of serving to
// done. The server's Addr is the address it listens on.
func serveMetrics(addr string, reg *prometheus.Registry, done chan<- error) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httpguard.Server(mux, httpguard.Limits{})
	srv.Addr = ln.Addr().String()
	go func() { done <- srv.Serve(ln) }()
	return srv, nil
}
