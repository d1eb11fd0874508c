//go:build !linux

package main

import (
	"context"
	"fmt"
	"io"
)

// The router of the compose demo and the real-process simulation drive Linux's TUN devices,
// network namespaces and nftables; on other systems (a darwin release binary) the commands
// are there, in the help too, and say so.

// runRouter refuses: vigil router needs Linux.
func runRouter(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelpArg(args[0]) {
		printHelp(stdout, "router", nil)
		return exitOK
	}
	fmt.Fprintln(stderr, "vigil router: needs Linux (a TUN device and its routes); run it in the compose demo's containers")
	return exitFailure
}

// realScenarioList names the scenarios of vigil sim -real, for its help.
func realScenarioList() string { return "(Linux only)" }

// runSimReal refuses: vigil sim -real needs Linux.
func runSimReal(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "vigil sim -real: needs Linux (network namespaces, TUN devices, nftables, root); vigil sim runs the same scenarios in process")
	return exitFailure
}
