package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/vigil-dns/vigil/config"
)

// runValidate checks a configuration file: every problem on its own line, as
// "FILE: path: message", and exit status 1; or a one-line summary and exit status 0.
// Usage errors exit with status 2.
func runValidate(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "configuration file to check (YAML or JSON)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: vigil validate -f FILE")
		return 2
	}
	plural := func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	}
	doc, err := config.Load(*file)
	var problems config.Errors
	switch {
	case errors.As(err, &problems):
		for _, p := range problems {
			fmt.Fprintf(stderr, "%s: %s\n", *file, p.Error())
		}
		fmt.Fprintf(stderr, "%s: %d %s\n", *file, len(problems), plural(len(problems), "problem", "problems"))
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "vigil validate: %v\n", err)
		return 1
	}
	sets := 0
	for _, z := range doc.Zones {
		sets += len(z.RecordSets)
	}
	fmt.Fprintf(stdout, "%s: valid: %d %s, %d %s, %d %s, %d record %s\n", *file,
		len(doc.Regions), plural(len(doc.Regions), "region", "regions"),
		len(doc.Checks), plural(len(doc.Checks), "check", "checks"),
		len(doc.Zones), plural(len(doc.Zones), "zone", "zones"),
		sets, plural(sets, "set", "sets"))
	return 0
}
