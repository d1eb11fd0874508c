package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/vigil-dns/vigil/config"
)

// runDev will run the whole demo network in one process. Until the checker, gossip, control
// plane and location roles land, it loads and validates the demo configuration and says what
// it is going to run.
func runDev(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "examples/demo.yaml", "configuration to load")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	doc, err := config.Load(*file)
	if err != nil {
		fmt.Fprintf(stderr, "vigil dev: %s:\n%v\n", *file, err)
		return 1
	}
	fmt.Fprintf(stdout, "vigil dev: %s is valid: %d regions, %d checks, %d zones.\n",
		*file, len(doc.Regions), len(doc.Checks), len(doc.Zones))
	fmt.Fprintln(stdout, "vigil dev: the embedded network (checkers, gossip, control plane, DNS locations) is not built yet; see the open issues.")
	return 0
}
