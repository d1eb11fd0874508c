package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/examples"
)

// runValidate checks a configuration file (without -f, the demo built into vigil): every
// problem on its own line, as "FILE: path: message", and exit status 1; or a one-line summary
// and exit status 0. Usage errors exit with status 2.
func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "configuration file to check, YAML or JSON (default: the demo built into vigil)")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: vigil validate [-f FILE]")
		return 2
	}
	doc, name, code := loadDocument(*file, stderr)
	if doc == nil {
		return code
	}
	sets := 0
	for _, z := range doc.Zones {
		sets += len(z.RecordSets)
	}
	fmt.Fprintf(stdout, "%s: valid: %d %s, %d %s, %d %s, %d record %s\n", name,
		len(doc.Regions), plural(len(doc.Regions), "region", "regions"),
		len(doc.Checks), plural(len(doc.Checks), "check", "checks"),
		len(doc.Zones), plural(len(doc.Zones), "zone", "zones"),
		sets, plural(sets, "set", "sets"))
	return 0
}

// loadDocument reads and validates the configuration file, or the embedded demo when file is
// empty, and returns it with the name messages give it. On failure it prints every problem,
// each once with the file's name, and returns a nil document with exit status 1.
func loadDocument(file string, stderr io.Writer) (*config.Document, string, int) {
	name, data := file, examples.Demo()
	if file == "" {
		name = examples.DemoName
	} else {
		b, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintf(stderr, "vigil: %v\n", err)
			return nil, name, 1
		}
		data = b
	}
	doc, err := config.Parse(data)
	var problems config.Errors
	switch {
	case errors.As(err, &problems):
		for _, p := range problems {
			fmt.Fprintf(stderr, "%s: %s\n", name, p.Error())
		}
		fmt.Fprintf(stderr, "%s: %d %s\n", name, len(problems), plural(len(problems), "problem", "problems"))
		return nil, name, 1
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, name, 1
	}
	return doc, name, 0
}

// plural returns one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
