package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/vigil-dns/vigil/config"
)

// runValidate checks a configuration file: every problem on its own line and a non-zero exit,
// or a one-line summary.
func runValidate(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "configuration file to check (YAML or JSON)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" {
		fmt.Fprintln(stderr, "vigil validate: -f FILE is required")
		return 2
	}
	doc, err := config.Load(*file)
	if err != nil {
		fmt.Fprintf(stderr, "%s:\n%v\n", *file, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: valid: %d regions, %d checks, %d zones\n", *file, len(doc.Regions), len(doc.Checks), len(doc.Zones))
	return 0
}
