package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/lab/dev"
)

// runDev runs the whole demo network in this process (`vigil dev`), or drives the faults of
// a running one (`vigil dev target|cut|heal|faults`).
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "target", "cut", "heal", "faults":
			return runDevFault(ctx, args[0], args[1:], stdout, stderr)
		case "notifications":
			return runDevNotifications(ctx, args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: vigil dev [flags]                   run the demo network\n"+
			"       vigil dev target <region> down|up    fail or recover a demo target's health check\n"+
			"       vigil dev cut <region> [<region>]    cut two regions apart, or one from all others\n"+
			"       vigil dev heal                       restore every link\n"+
			"       vigil dev faults                     list the faults in force\n"+
			"       vigil dev notifications              show what the dev webhook and Alertmanager receivers got\n\nflags:")
		fs.PrintDefaults()
	}
	file := fs.String("f", "", "configuration to apply at start (default: the demo, examples/demo.yaml, built into vigil)")
	dataDir := fs.String("data-dir", "", "directory of the control plane's data and each node's disk copy of the configuration (default: a temporary directory, removed at exit)")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	if fs.NArg() > 0 {
		return unknownSub(stderr, "dev", fs.Arg(0))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "vigil dev: -log-level: %v\n", err)
		return 2
	}
	doc, name, code := loadDocument(*file, stderr)
	if doc == nil {
		return code
	}
	cfg := dev.DefaultConfig()
	cfg.Document, cfg.CheckerHTTP = doc, dev.DefaultCheckerHTTP()
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.DataDir = *dataDir
	if cfg.DataDir == "" {
		tmp, err := os.MkdirTemp("", "vigil-dev-")
		if err != nil {
			fmt.Fprintf(stderr, "vigil dev: %v\n", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		cfg.DataDir = tmp
	}
	n, err := dev.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "vigil dev: %v\n", err)
		return 1
	}
	printDevAddresses(stdout, cfg, name)
	<-ctx.Done()
	fmt.Fprintln(stdout, "vigil dev: stopping")
	if err := n.Wait(); err != nil {
		fmt.Fprintf(stderr, "vigil dev: %v\n", err)
		return 1
	}
	return 0
}

func printDevAddresses(w io.Writer, cfg dev.Config, file string) {
	fmt.Fprintf(w, "vigil dev: %s applied; data in %s\n", file, cfg.DataDir)
	fmt.Fprintf(w, "  control API   http://%s  (write token %q; faults under /v1/dev/; /metrics)\n", cfg.ControlAddr, dev.DemoToken)
	for _, r := range cfg.Regions {
		l := cfg.Locations[r]
		fmt.Fprintf(w, "  %-8s DNS %s (udp+tcp)  HTTP http://%s  target http://%s/healthz  checkers %s\n",
			r, l.DNS, l.HTTP, cfg.Targets[r], strings.Join(cfg.CheckerHTTP[r][:min(len(cfg.CheckerHTTP[r]), cfg.CheckersPerRegion)], " "))
	}
	fmt.Fprintf(w, "try: dig @127.0.0.1 -p 5301 www.demo.vigil.test   then: vigil dev target us-east down   then: vigil dev notifications\n")
	fmt.Fprintf(w, "for vigil override, audit, apply and dnssec, in another shell:\n  %s\n", devExports(cfg))
}

// devExports returns the shell line that points the client commands (vigil override, audit,
// apply, dnssec) at the dev network: its control API and token, and none of the TLS files
// another network's line may have set.
func devExports(cfg dev.Config) string {
	return fmt.Sprintf("export %s=http://%s %s=%s; unset %s %s %s %s",
		envServer, cfg.ControlAddr, envToken, dev.DemoToken, envTokenFile, envCACert, envClientCert, envClientKey)
}

// runDevFault drives the faults of a running `vigil dev` through its control API.
func runDevFault(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dev "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("control", "http://127.0.0.1:7700", "base URL of the dev network's control API")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	c := dev.Client{BaseURL: *base}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rest := fs.Args()
	var (
		faults []dev.Fault
		err    error
	)
	switch {
	case verb == "target" && len(rest) == 2 && (rest[1] == "down" || rest[1] == "up"):
		faults, err = c.SetTargetDown(ctx, rest[0], rest[1] == "down")
	case verb == "cut" && (len(rest) == 1 || len(rest) == 2):
		faults, err = c.Cut(ctx, rest...)
	case verb == "heal" && len(rest) == 0:
		faults, err = c.Heal(ctx)
	case verb == "faults" && len(rest) == 0:
		faults, err = c.Faults(ctx)
	default:
		err = errors.New("usage: vigil dev target <region> down|up | cut <region> [<region>] | heal | faults")
		fmt.Fprintln(stderr, err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "vigil dev %s: %v\n", verb, err)
		return 1
	}
	if len(faults) == 0 {
		fmt.Fprintln(stdout, "no faults")
	}
	for _, f := range faults {
		fmt.Fprintln(stdout, f)
	}
	return 0
}

// runDevNotifications prints what a running `vigil dev`'s receivers took: its webhook (each
// event's key, a repeated delivery marked) and its Alertmanager-compatible endpoint.
func runDevNotifications(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dev notifications", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("control", "http://127.0.0.1:7700", "base URL of the dev network's control API")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := dev.Client{BaseURL: *base}.NotificationsOf(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "vigil dev notifications: %v\n", err)
		return 1
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no notifications yet (try: vigil dev target us-east down, and wait a few seconds)")
	}
	for _, r := range list {
		dup := ""
		if r.Duplicate {
			dup = " (repeated delivery, same key)"
		}
		fmt.Fprintf(stdout, "%s  %-12s %-8s %s  %s%s\n", r.At.Format("15:04:05.000"), r.Receiver, r.Kind, r.Key, r.Summary, dup)
	}
	return 0
}
