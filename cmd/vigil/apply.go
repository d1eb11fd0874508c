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
)

// runApply sends a whole configuration document to the control plane, which applies it
// atomically or rejects it with every problem listed.
func runApply(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "configuration file to apply (YAML or JSON)")
	servers := fs.String("server", "http://127.0.0.1:7100", "comma-separated API URLs of voters; any of them forwards to the leader")
	tokenFile := fs.String("token-file", "", "file holding the write token (default: $VIGIL_TOKEN)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long; until then, voters that do not answer are asked again")
	var tf tlsClientFlags
	tf.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	hc, err := tf.client()
	if err != nil {
		fmt.Fprintf(stderr, "vigil apply: %v\n", err)
		return 2
	}
	if *file == "" {
		fmt.Fprintln(stderr, "vigil apply: -f FILE is required")
		return 2
	}
	body, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintf(stderr, "vigil apply: %v\n", err)
		return 1
	}
	token, err := clientToken(*tokenFile)
	if err != nil {
		fmt.Fprintf(stderr, "vigil apply: %v\n", err)
		return 1
	}
	ctype := client.ContentYAML
	if strings.HasSuffix(strings.ToLower(*file), ".json") {
		ctype = client.ContentJSON
	}
	voters := splitList(*servers)
	if len(voters) == 0 {
		fmt.Fprintln(stderr, "vigil apply: -server names no voter")
		return 2
	}
	c, err := client.New(client.Config{Voters: voters, Token: token, HTTP: hc})
	if err != nil {
		fmt.Fprintf(stderr, "vigil apply: %v\n", err)
		return 2
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
			fmt.Fprintf(stderr, "%s: rejected (HTTP %d): %s\n", *file, e.StatusCode, e.Message)
			for _, fe := range e.Problems {
				fmt.Fprintf(stderr, "  %s\n", fe.Error())
			}
			return 1
		default:
			fmt.Fprintf(stderr, "vigil apply: %v\n", err)
			return 1
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(stderr, "vigil apply: no voter applied the document within %s: %v\n", *timeout, lastErr)
			return 1
		case <-time.After(wait):
		}
	}
}
