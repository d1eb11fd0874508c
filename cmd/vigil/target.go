package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/vigil-dns/vigil/lab/cluster"
)

// runTarget serves a demo target: /healthz answers 200 while up and 503 while down; POST
// /down and POST /up flip it. The compose demo runs one per region.
func runTarget(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("target", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:7811", "address to serve on")
	name := fs.String("name", "demo", "the target's name, shown in its answers")
	down := fs.Bool("down", false, "start with the health endpoint failing")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	t, err := cluster.NewTarget(*name, *listen)
	if err != nil {
		fmt.Fprintf(stderr, "vigil target: %v\n", err)
		return 1
	}
	t.SetDown(*down)
	fmt.Fprintf(stdout, "vigil target: %s on http://%s/healthz\n", *name, t.Addr())
	if err := t.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "vigil target: %v\n", err)
		return 1
	}
	return 0
}
