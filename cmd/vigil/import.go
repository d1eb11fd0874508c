package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vigil-dns/vigil/config/zonefile"
)

// runImport dispatches vigil import's subcommands; zonefile is the one there is.
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, stop := dispatchHelp("import", args, stdout, stderr); stop {
		return code
	}
	return runImportZonefile(ctx, args[1:], stdout, stderr)
}

// runImportZonefile reads a zone file and writes the configuration document of its zone:
// every malformed entry on stderr with its line and exit status 1 without a document; else
// the document, each record it leaves out or changes on stderr with its line, and exit status
// 1 when there is any, 0 when the document holds the whole zone.
func runImportZonefile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("import zonefile", stderr)
	zone := fs.String("zone", "", "the zone's apex, e.g. example.com (required): the file's first origin")
	out := fs.String("o", "", "write the document to this file instead of standard output")
	regions := fs.String("regions", strings.Join(zonefile.DefaultRegions(), ","), "comma-separated regions of the document written")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	if *zone == "" || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "vigil import zonefile: name the zone with -zone and give one zone file (- for standard input)")
		shortUsage(stderr, "import zonefile")
		return exitUsage
	}
	file := fs.Arg(0)
	opts := zonefile.Options{Zone: *zone, Regions: splitList(*regions), ReadFile: readZoneFile}
	var data []byte
	var err error
	if file == "-" {
		file, opts.ReadFile = "stdin", nil
		data, err = io.ReadAll(io.LimitReader(os.Stdin, zonefile.MaxInput+1))
	} else {
		data, err = readZoneFile(file)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vigil import zonefile: %v\n", err)
		return exitFailure
	}
	res, err := zonefile.Import(file, data, opts)
	if err != nil {
		fmt.Fprintf(stderr, "vigil import zonefile: %v\n", err)
		if errors.Is(err, zonefile.ErrZoneName) {
			return exitUsage
		}
		return exitFailure
	}
	for _, p := range res.Errors {
		fmt.Fprintln(stderr, p)
	}
	if n := len(res.Errors); n > 0 {
		fmt.Fprintf(stderr, "vigil import zonefile: %s: %d %s; nothing written\n", file, n, plural(n, "error", "errors"))
		return exitFailure
	}
	for _, p := range res.Notes {
		fmt.Fprintf(stderr, "%s:%d: note: %s\n", p.File, p.Line, p.Message)
	}
	for _, p := range res.Omitted {
		fmt.Fprintln(stderr, p)
	}
	if *out != "" {
		if err := os.WriteFile(*out, res.Text, 0o644); err != nil {
			fmt.Fprintf(stderr, "vigil import zonefile: %v\n", err)
			return exitFailure
		}
	} else if _, err := stdout.Write(res.Text); err != nil {
		fmt.Fprintf(stderr, "vigil import zonefile: %v\n", err)
		return exitFailure
	}
	sets := len(res.Document.Zones[0].RecordSets)
	summary := fmt.Sprintf("vigil import zonefile: %s: %d %s in %d record %s", res.Document.Zones[0].Name,
		res.Records, plural(res.Records, "record", "records"), sets, plural(sets, "set", "sets"))
	if n := len(res.Omitted); n > 0 {
		fmt.Fprintf(stderr, "%s; %d left out or changed, listed above\n", summary, n)
		return exitFailure
	}
	fmt.Fprintln(stderr, summary)
	return exitOK
}

// readZoneFile reads a zone file, or a file it includes, up to zonefile.MaxInput bytes.
func readZoneFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, zonefile.MaxInput+1))
}
