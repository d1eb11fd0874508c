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
	"time"

	"github.com/vigil-dns/vigil/externaldns"
	"github.com/vigil-dns/vigil/httpguard"
)

// runExternalDNS serves the ExternalDNS webhook provider: ExternalDNS (--provider=webhook)
// sends it the records it wants, and it writes them to the control plane.
func runExternalDNS(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("externaldns", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8888", "address the webhook listens on (ExternalDNS's --webhook-provider-url); keep it on loopback or the pod's network")
	servers := fs.String("server", "http://127.0.0.1:7100", "comma-separated API URLs of control voters")
	tokenFile := fs.String("token-file", "", "file holding the write token (default: $VIGIL_TOKEN)")
	zones := fs.String("zone", "", "comma-separated zones the provider manages (they must exist in Vigil)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *zones == "" {
		fmt.Fprintln(stderr, "vigil externaldns: -zone is required")
		return 2
	}
	token, err := clientToken(*tokenFile)
	if err != nil {
		fmt.Fprintf(stderr, "vigil externaldns: %v\n", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	p, err := externaldns.New(externaldns.Config{Voters: splitList(*servers), Token: token, Zones: splitList(*zones), Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "vigil externaldns: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "vigil externaldns: %v\n", err)
		return 1
	}
	srv := httpguard.Server(p, httpguard.Limits{})
	fmt.Fprintf(stdout, "vigil externaldns: webhook on http://%s for %s\n", ln.Addr(), *zones)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
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
