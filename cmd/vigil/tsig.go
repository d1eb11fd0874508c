package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/safetext"
	"github.com/vigil-dns/vigil/location"
)

// runTSIG writes and lists the TSIG keys of zone transfers that the control plane holds:
//
//	vigil tsig put NAME -secret-file FILE   create or replace a key (the voter seals it)
//	vigil tsig list                          names and algorithms, never a secret
//	vigil tsig delete NAME                   remove a key
func runTSIG(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, stop := dispatchHelp("tsig", args, stdout, stderr); stop {
		return code
	}
	verb := args[0]
	fs := flag.NewFlagSet("tsig "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clientFlags
	cf.register(fs)
	alg := fs.String("algorithm", "", "put: hmac-sha256 (the default), hmac-sha384 or hmac-sha512; by default the key line's own when -secret-file holds one")
	secretFile := fs.String("secret-file", "", "put: file holding the key's base64 secret (tsig-keygen's, or head -c 32 /dev/urandom | base64), or a line as -tsig-keys-file takes: [algorithm:]name:secret")
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	if code, stop := parseFlags(ctx, fs, reorderFlags(args[1:]), stdout, stderr); stop {
		return code
	}
	want := 1
	if verb == "list" {
		want = 0
	}
	if fs.NArg() != want {
		if want == 0 {
			fmt.Fprintln(stderr, "vigil tsig list: takes no argument")
		} else {
			fmt.Fprintf(stderr, "vigil tsig %s: one key NAME is required\n", verb)
		}
		return 2
	}
	cf.resolve(fs)
	var req state.TSIGKeyRequest
	if verb == "put" {
		var err error
		if req, err = readTSIGSecret(*secretFile, fs.Arg(0), *alg); err != nil {
			return usageErr(stderr, "tsig put", err)
		}
	}
	c, err := cf.client()
	if err != nil {
		return usageErr(stderr, "tsig "+verb, err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	switch verb {
	case "put":
		res, err := c.PutTSIGKey(ctx, fs.Arg(0), req)
		if err != nil {
			return cf.fail(stderr, "tsig put", err)
		}
		fmt.Fprintf(stdout, "TSIG key %s (%s) stored sealed at index %d\n", config.TSIGKeyName(fs.Arg(0)), config.TSIGAlgorithm(req.Algorithm), res.Index)
	case "delete":
		res, err := c.DeleteTSIGKey(ctx, fs.Arg(0))
		if err != nil {
			return cf.fail(stderr, "tsig delete", err)
		}
		fmt.Fprintf(stdout, "TSIG key %s deleted at index %d\n", config.TSIGKeyName(fs.Arg(0)), res.Index)
	case "list":
		keys, err := c.TSIGKeys(ctx)
		if err != nil {
			return cf.fail(stderr, "tsig list", err)
		}
		safetext.EscapeStrings(&keys) // what the server says is printed: no line breaks or escapes
		for _, k := range keys {
			fmt.Fprintf(stdout, "%s %s secret %s\n", k.Name, k.Algorithm, k.Secret)
		}
	}
	return 0
}

// readTSIGSecret reads the secret of key name from file: its first line that is not blank or
// a comment, either the base64 secret alone or a key line as -tsig-keys-file takes
// ([algorithm:]name:secret, whose name must be name). alg, when not empty, is the algorithm;
// else the line's, else hmac-sha256. The key is checked as the voter will check it.
func readTSIGSecret(file, name, alg string) (state.TSIGKeyRequest, error) {
	if file == "" {
		return state.TSIGKeyRequest{}, fmt.Errorf("-secret-file is required: the secret is never given on the command line, where ps and shell histories show it")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return state.TSIGKeyRequest{}, fmt.Errorf("-secret-file: %w", err)
	}
	var line string
	for l := range strings.Lines(string(data)) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			line = l
			break
		}
	}
	req := state.TSIGKeyRequest{Algorithm: alg, Secret: line}
	if strings.Contains(line, ":") {
		keys, err := location.ReadTSIGKeys(strings.NewReader(line))
		if err != nil {
			return state.TSIGKeyRequest{}, fmt.Errorf("-secret-file %s: %w", file, err)
		}
		k := keys[0]
		if config.TSIGKeyName(k.Name) != config.TSIGKeyName(name) {
			return state.TSIGKeyRequest{}, fmt.Errorf("-secret-file %s holds the key %s, not %s", file, k.Name, config.TSIGKeyName(name))
		}
		req.Secret = k.Secret
		if req.Algorithm == "" {
			req.Algorithm = k.Algorithm
		}
	}
	req.Algorithm = config.TSIGAlgorithm(req.Algorithm)
	if why := config.TSIGKeyProblem(name, req.Algorithm, req.Secret); why != "" {
		return state.TSIGKeyRequest{}, fmt.Errorf("-secret-file %s: %s", file, why)
	}
	return req, nil
}
