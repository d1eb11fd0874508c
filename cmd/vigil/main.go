// Command vigil is Vigil's one binary: its subcommands run the roles (control, checker,
// location), the embedded development network, and the operator's tools.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand of vigil.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands. Each lives in a file of its own name.
func commands() []command {
	return []command{
		{"agent", "run a node's roles: control (raft voter and API), checker, location (DNS)", runAgent},
		{"apply", "apply a whole configuration file through the control plane", runApply},
		{"audit", "print the control plane's audit log: who wrote what, when", runAudit},
		{"dev", "run a whole multi-region network in this process, on loopback; drive its faults", runDev},
		{"keyring", "rotate the gossip key on every node of a running pool: list, install, use, remove", runKeyring},
		{"override", "force a check healthy or unhealthy, or drain a record, for a while (set, list, clear)", runOverride},
		{"dnssec", "print a signed zone's DS records for its parent (vigil dnssec ds ZONE), list its keys, roll them over", runDNSSEC},
		{"externaldns", "serve the ExternalDNS webhook provider: ExternalDNS's records become Vigil record sets", runExternalDNS},
		{"load", "generate load: concurrent writes on the control plane, or a synthetic configuration of any size", runLoad},
		{"sim", "run a fault scenario on an in-process network and check every DNS answer it gave", runSim},
		{"router", "run a region's router of the compose demo (latency, loss, cuts between regions)", runRouter},
		{"shard", "analyse the blast radius of shuffle shards (vigil shard analyze)", runShard},
		{"status", "print a node's status: verdicts, evidence, checkers, answers, probes, members", runStatus},
		{"tls", "create a CA and node certificates for mutual TLS (vigil tls init)", runTLS},
		{"token", "create a named API token with a scope (vigil token create)", runToken},
		{"target", "serve a demo target whose health endpoint can be switched down and up", runTarget},
		{"validate", "check a configuration file and list every problem", runValidate},
		{"version", "print the build version", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches args to a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "vigil: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: vigil <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
}
