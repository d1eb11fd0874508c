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
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vigil-dns/vigil/control"
)

// splitTokens separates a token file's plain tokens from its named ones ("name scope
// sha256:<hex>" lines).
func splitTokens(lines []string) (plain []string, named []control.Token, err error) {
	for _, l := range lines {
		if len(strings.Fields(l)) == 1 {
			plain = append(plain, l)
			continue
		}
		t, err := control.ParseTokenLine(l)
		if err != nil {
			return nil, nil, err
		}
		named = append(named, t)
	}
	return plain, named, nil
}

// apiFlags are the flags of the commands that talk to the control API.
type apiFlags struct {
	servers, tokenFile string
	timeout            time.Duration
}

func (f *apiFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.servers, "server", "http://127.0.0.1:7100", "comma-separated API URLs of voters; any of them forwards to the leader")
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding the token, first line (default: $VIGIL_TOKEN)")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "give up after this long")
}

// call makes one request of the first voter that answers; it returns the status and body.
func (f *apiFlags) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	token, err := clientToken(f.tokenFile)
	if err != nil {
		return 0, nil, err
	}
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return 0, nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var lastErr error
	for _, s := range splitList(f.servers) {
		req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(s, "/")+path, bytes.NewReader(data))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		out, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			lastErr = fmt.Errorf("%s: HTTP 503: %s", s, strings.TrimSpace(string(out)))
			continue
		}
		return resp.StatusCode, out, err
	}
	if lastErr == nil {
		lastErr = errors.New("-server names no voter")
	}
	return 0, nil, lastErr
}

// answer prints an error answer and returns the exit code: 0 for a 2xx.
func answer(stderr io.Writer, cmd string, code int, out []byte, err error) int {
	if err != nil {
		fmt.Fprintf(stderr, "vigil %s: %v\n", cmd, err)
		return 1
	}
	if code/100 == 2 {
		return 0
	}
	var e control.ErrorBody
	if json.Unmarshal(out, &e) != nil || e.Error == "" {
		fmt.Fprintf(stderr, "vigil %s: HTTP %d: %s\n", cmd, code, out)
		return 1
	}
	fmt.Fprintf(stderr, "vigil %s: HTTP %d: %s\n", cmd, code, e.Error)
	for _, fe := range e.Errors {
		fmt.Fprintf(stderr, "  %s\n", fe.Error())
	}
	return 1
}

// runOverride sets, lists and clears maintenance overrides.
func runOverride(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	usage := "usage: vigil override set -check ID -state healthy|unhealthy | -drain ZONE/NAME/TYPE/VALUE, -reason TEXT -for DURATION\n       vigil override list\n       vigil override clear ID | -check ID | -drain ZONE/NAME/TYPE/VALUE"
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var f apiFlags
	fs := flag.NewFlagSet("override "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs)
	check := fs.String("check", "", "the check to force (set) or whose override to clear")
	state := fs.String("state", "unhealthy", "set -check: healthy or unhealthy")
	drain := fs.String("drain", "", "the record to drain: ZONE/NAME/TYPE/VALUE, e.g. example.com/www/A/192.0.2.1")
	reason := fs.String("reason", "", "set: why (required)")
	dur := fs.Duration("for", time.Hour, "set: how long it lasts (at most 30 days)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	var zone, name, typ, value string
	if *drain != "" {
		parts := strings.SplitN(*drain, "/", 4)
		if len(parts) != 4 {
			fmt.Fprintln(stderr, "vigil override: -drain wants ZONE/NAME/TYPE/VALUE")
			return 2
		}
		zone, name, typ, value = parts[0], parts[1], parts[2], parts[3]
	}
	switch args[0] {
	case "set":
		req := control.OverrideRequest{Kind: *state, Check: *check, Reason: *reason, For: dur.String()}
		if *drain != "" {
			req = control.OverrideRequest{Kind: control.OverrideDrain, Zone: zone, Name: name, Type: typ, Value: value, Reason: *reason, For: dur.String()}
		} else if *check == "" {
			fmt.Fprintln(stderr, usage)
			return 2
		}
		code, out, err := f.call(ctx, http.MethodPost, "/v1/overrides", req)
		if rc := answer(stderr, "override set", code, out, err); rc != 0 {
			return rc
		}
		id := control.OverrideID(*check, zone, name, control.RecordTypeOf(typ), value)
		fmt.Fprintf(stdout, "override %s set until %s\n", id, time.Now().Add(*dur).UTC().Format(time.RFC3339))
		return 0
	case "clear":
		id := fs.Arg(0)
		if id == "" && (*check != "" || *drain != "") {
			id = control.OverrideID(*check, zone, name, control.RecordTypeOf(typ), value)
		}
		if id == "" {
			fmt.Fprintln(stderr, usage)
			return 2
		}
		code, out, err := f.call(ctx, http.MethodDelete, "/v1/overrides/"+id, nil)
		if rc := answer(stderr, "override clear", code, out, err); rc != 0 {
			return rc
		}
		fmt.Fprintf(stdout, "override %s cleared\n", id)
		return 0
	case "list":
		code, out, err := f.call(ctx, http.MethodGet, "/v1/overrides", nil)
		if rc := answer(stderr, "override list", code, out, err); rc != 0 {
			return rc
		}
		var list struct{ Data []control.OverrideView }
		if err := json.Unmarshal(out, &list); err != nil {
			fmt.Fprintf(stderr, "vigil override list: %v\n", err)
			return 1
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tKIND\tTARGET\tAUTHOR\tEXPIRES\tACTIVE\tREASON")
		for _, o := range list.Data {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\t%s\n", o.ID, o.Kind, o.Target(), o.Author, o.Expires.UTC().Format(time.RFC3339), o.Active, o.Reason)
		}
		tw.Flush()
		return 0
	}
	fmt.Fprintln(stderr, usage)
	return 2
}

// runAudit prints the audit log.
func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f apiFlags
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs)
	limit := fs.Int("n", 50, "the newest entries to print")
	asJSON := fs.Bool("json", false, "print the entries as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	code, out, err := f.call(ctx, http.MethodGet, fmt.Sprintf("/v1/audit?limit=%d", *limit), nil)
	if rc := answer(stderr, "audit", code, out, err); rc != 0 {
		return rc
	}
	var view struct{ Data control.AuditView }
	if err := json.Unmarshal(out, &view); err != nil {
		fmt.Fprintf(stderr, "vigil audit: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(view.Data.Entries)
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tTOKEN\tOPERATION\tPATH\tSUMMARY")
	for _, e := range view.Data.Entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s %s\t%s\n", e.Seq, e.Time.UTC().Format(time.RFC3339), e.Token, e.Op, e.Method, e.Path, e.Summary)
	}
	tw.Flush()
	return 0
}

// runToken creates a named token: it prints the secret (give it to its user) and the line
// for the voters' token file (which holds only its hash).
func runToken(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprintln(stderr, "usage: vigil token create -name NAME -scope read|write|write:check=PREFIX,zone=PREFIX")
		return 2
	}
	fs := flag.NewFlagSet("token create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the token's name, as the audit log and overrides show it (required)")
	scope := fs.String("scope", "read", "read, write, or write limited to checks and zones by prefix: write:check=web-,zone=example.com.")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	sc, err := control.ParseScope(*scope)
	if err != nil {
		fmt.Fprintf(stderr, "vigil token: %v\n", err)
		return 2
	}
	secret, line, err := control.NewToken(*name, sc)
	if err != nil {
		fmt.Fprintf(stderr, "vigil token: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "token (give it to %s; it is shown once):\n  %s\nline for every voter's -token-file (the secret's SHA-256 only):\n  %s\n", *name, secret, line)
	return 0
}
