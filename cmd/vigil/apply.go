package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/internal/safetext"
)

// runApply sends a whole configuration document to the control plane, which applies it
// atomically or rejects it with every problem listed.
func runApply(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "configuration file to apply (YAML or JSON)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long; until then, voters that do not answer are asked again (default 10m for a document over 32 MiB, which is sent gzip-compressed: 1,000,000 checks take minutes)")
	var cf clientFlags
	cf.register(fs)
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	cf.resolve(fs)
	if *file == "" {
		fmt.Fprintln(stderr, "vigil apply: -f FILE is required")
		return 2
	}
	body, err := os.ReadFile(*file)
	if err != nil {
		return usageErr(stderr, "apply", fmt.Errorf("-f: %w", err))
	}
	if len(body) > client.CompressAbove && !flagSet(fs, "timeout") {
		*timeout = max(*timeout, 10*time.Minute)
	}
	c, err := cf.client()
	if err != nil {
		return usageErr(stderr, "apply", err)
	}
	ctype := client.ContentYAML
	if strings.HasSuffix(strings.ToLower(*file), ".json") {
		ctype = client.ContentJSON
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var lastErr error
	// Voters that do not answer yet (starting, or no leader elected) are asked again until
	// the timeout: a script can start a voter and apply at once.
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		res, err := c.PutDocument(ctx, body, ctype)
		if err == nil {
			fmt.Fprintf(stdout, "%s: applied at index %d\n", *file, res.Index)
			return 0
		}
		var e *client.Error
		switch {
		case client.Unavailable(err):
			if ctx.Err() == nil || lastErr == nil { // past the timeout, keep the voters' last answer
				lastErr = err
			}
		case errors.As(err, &e):
			fmt.Fprintf(stderr, "%s: rejected (HTTP %d): %s\n", *file, e.StatusCode, safetext.Escape(e.Message))
			for _, fe := range e.Problems {
				fmt.Fprintf(stderr, "  %s\n", safetext.Escape(fe.Error()))
			}
			if fix := cf.fix(err); fix != "" {
				fmt.Fprintf(stderr, "  fix: %s\n", fix)
			}
			return 1
		default:
			return cf.fail(stderr, "apply", err)
		}
		select {
		case <-ctx.Done():
			return cf.fail(stderr, "apply", fmt.Errorf("no voter applied the document within %s: %w", *timeout, lastErr))
		case <-time.After(wait):
		}
	}
}

// flagSet reports whether the flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}
