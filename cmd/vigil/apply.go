package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/control"
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
	client, err := tf.client()
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
	ctype := "application/yaml"
	if strings.HasSuffix(strings.ToLower(*file), ".json") {
		ctype = "application/json"
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var lastErr error
	// Voters that do not answer yet (starting, or no leader elected) are asked again until
	// the timeout: a script can start a voter and apply at once.
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		for _, s := range strings.Split(*servers, ",") {
			s = strings.TrimRight(strings.TrimSpace(s), "/")
			if s == "" {
				continue
			}
			code, out, err := putDocument(ctx, client, s, token, ctype, body)
			if err != nil && ctx.Err() != nil && lastErr != nil {
				continue // the timeout, not news: keep the voters' last answer
			}
			if err != nil {
				if ue := (*url.Error)(nil); errors.As(err, &ue) {
					err = ue.Err
				}
				lastErr = fmt.Errorf("%s: %w", s, err)
				continue
			}
			if code == http.StatusServiceUnavailable || code == http.StatusBadGateway {
				lastErr = fmt.Errorf("%s: HTTP %d: %s", s, code, strings.TrimSpace(string(out)))
				continue // another voter may reach the leader
			}
			if code/100 == 2 {
				var res control.WriteResult
				_ = json.Unmarshal(out, &res)
				fmt.Fprintf(stdout, "%s: applied at index %d\n", *file, res.Index)
				return 0
			}
			var e control.ErrorBody
			if json.Unmarshal(out, &e) != nil || e.Error == "" {
				fmt.Fprintf(stderr, "vigil apply: %s: HTTP %d: %s\n", s, code, out)
				return 1
			}
			fmt.Fprintf(stderr, "%s: rejected (HTTP %d): %s\n", *file, code, e.Error)
			for _, fe := range e.Errors {
				fmt.Fprintf(stderr, "  %s\n", fe.Error())
			}
			return 1
		}
		if lastErr == nil {
			fmt.Fprintln(stderr, "vigil apply: -server names no voter")
			return 2
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(stderr, "vigil apply: no voter applied the document within %s: %v\n", *timeout, lastErr)
			return 1
		case <-time.After(wait):
		}
	}
}

func putDocument(ctx context.Context, client *http.Client, server, token, ctype string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, server+"/v1/document", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", ctype)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, out, err
}
