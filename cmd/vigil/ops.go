package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/safetext"
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

// runOverride sets, lists and clears maintenance overrides.
func runOverride(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	usage := "usage: vigil override set -check ID -state healthy|unhealthy | -drain ZONE/NAME/TYPE/VALUE, -reason TEXT -for DURATION\n       vigil override list\n       vigil override clear ID | -check ID | -drain ZONE/NAME/TYPE/VALUE"
	if code, stop := dispatchHelp("override", args, stdout, stderr); stop {
		return code
	}
	var cf clientFlags
	fs := flag.NewFlagSet("override "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf.register(fs)
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	check := fs.String("check", "", "the check to force (set) or whose override to clear")
	state := fs.String("state", "unhealthy", "set -check: healthy or unhealthy")
	drain := fs.String("drain", "", "the record to drain: ZONE/NAME/TYPE/VALUE, e.g. example.com/www/A/192.0.2.1")
	reason := fs.String("reason", "", "set: why (required)")
	dur := fs.Duration("for", time.Hour, "set: how long it lasts (at most 30 days)")
	if code, stop := parseFlags(ctx, fs, args[1:], stdout, stderr); stop {
		return code
	}
	cf.resolve(fs)
	switch args[0] {
	case "set", "clear", "list":
	default:
		fmt.Fprintln(stderr, usage)
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
	c, err := cf.client()
	if err != nil {
		return usageErr(stderr, "override "+args[0], err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	o := overrideCmd{c: c, cf: &cf, usage: usage, check: *check, state: *state, drain: *drain != "",
		zone: zone, name: name, typ: typ, value: value, reason: *reason, dur: *dur}
	switch args[0] {
	case "set":
		return o.set(ctx, stdout, stderr)
	case "clear":
		return o.clear(ctx, fs.Arg(0), stdout, stderr)
	case "list":
		return o.list(ctx, stdout, stderr)
	}
	fmt.Fprintln(stderr, usage)
	return 2
}

// overrideCmd is one `vigil override` command: its flags and its API client.
type overrideCmd struct {
	c                      *client.Client
	cf                     *clientFlags // the client configuration, whose fix a failure names
	usage                  string
	check, state, reason   string
	drain                  bool // -drain named the record zone/name/typ/value
	zone, name, typ, value string
	dur                    time.Duration
}

// set runs `vigil override set`.
func (o overrideCmd) set(ctx context.Context, stdout, stderr io.Writer) int {
	req := state.OverrideRequest{Kind: o.state, Check: o.check, Reason: o.reason, For: o.dur.String()}
	if o.drain {
		req = state.OverrideRequest{Kind: state.OverrideDrain, Zone: o.zone, Name: o.name, Type: o.typ, Value: o.value, Reason: o.reason, For: o.dur.String()}
	} else if o.check == "" {
		fmt.Fprintln(stderr, o.usage)
		return 2
	}
	if _, err := o.c.SetOverride(ctx, req); err != nil {
		return o.cf.fail(stderr, "override set", err)
	}
	id := state.OverrideID(o.check, o.zone, o.name, state.RecordTypeOf(o.typ), o.value)
	fmt.Fprintf(stdout, "override %s set until %s\n", id, time.Now().Add(o.dur).UTC().Format(time.RFC3339))
	return 0
}

// clear runs `vigil override clear`: of the override id, or else of -check or -drain.
func (o overrideCmd) clear(ctx context.Context, id string, stdout, stderr io.Writer) int {
	if id == "" && (o.check != "" || o.drain) {
		id = state.OverrideID(o.check, o.zone, o.name, state.RecordTypeOf(o.typ), o.value)
	}
	if id == "" {
		fmt.Fprintln(stderr, o.usage)
		return 2
	}
	if _, err := o.c.ClearOverride(ctx, id); err != nil {
		return o.cf.fail(stderr, "override clear", err)
	}
	fmt.Fprintf(stdout, "override %s cleared\n", id)
	return 0
}

// list runs `vigil override list`.
func (o overrideCmd) list(ctx context.Context, stdout, stderr io.Writer) int {
	list, err := o.c.Overrides(ctx)
	if err != nil {
		return o.cf.fail(stderr, "override list", err)
	}
	// Reasons are free text and entries written before reasons were checked may hold line
	// breaks or escape sequences: every field is escaped before it makes a row.
	safetext.EscapeStrings(&list)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tTARGET\tAUTHOR\tEXPIRES\tACTIVE\tREASON")
	for _, v := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\t%s\n", v.ID, v.Kind, v.Target(), v.Author, v.Expires.UTC().Format(time.RFC3339), v.Active, v.Reason)
	}
	tw.Flush()
	return 0
}

// runAudit prints the audit log; with -verify it checks the log's hash chain whole (exit 1
// when it does not verify), with -refusals it prints what the voter asked refused.
func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cf clientFlags
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf.register(fs)
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	limit := fs.Int("n", 50, "the newest entries to print")
	asJSON := fs.Bool("json", false, "print the entries as JSON")
	verify := fs.Bool("verify", false, "fetch the whole log and check its hash chain: print OK with counts, or the first broken link and exit 1")
	refusals := fs.Bool("refusals", false, "print the requests the voter asked refused (failed authentication, writes refused): each voter keeps its own")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	cf.resolve(fs)
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vigil audit: unexpected argument %q (flags only)\n", fs.Arg(0))
		return 2
	}
	c, err := cf.client()
	if err != nil {
		return usageErr(stderr, "audit", err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if *refusals {
		rv, err := c.Refusals(ctx)
		if err != nil {
			return cf.fail(stderr, "audit -refusals", err)
		}
		return printRefusals(stdout, rv, *asJSON)
	}
	n := *limit
	if *verify {
		n = state.MaxAuditEntries
	}
	view, err := c.Audit(ctx, n, 0)
	if err != nil {
		return cf.fail(stderr, "audit", err)
	}
	if *verify {
		r, err := state.VerifyAudit(view)
		if err != nil {
			fmt.Fprintf(stdout, "FAILED: %v\n", err)
			fmt.Fprintf(stderr, "vigil audit -verify: the audit log does not verify: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "OK: %d entries (%d chained, %d from before the chain), %d links checked, %d entries pruned by retention (%d gaps, all accounted for by checkpoints); newest %d, head %s\n",
			r.Entries, r.Chained, r.Entries-r.Chained, r.Links, r.Pruned, r.Gaps, r.Newest, r.Head)
		return 0
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(view.Entries)
		return 0
	}
	safetext.EscapeStrings(&view.Entries) // as in override list: no field may forge a row
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tTOKEN\tVIA\tOPERATION\tPATH\tSUMMARY")
	for _, e := range view.Entries {
		via := e.Via
		if via == "" {
			via = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s %s\t%s\n", e.Seq, e.Time.UTC().Format(time.RFC3339), e.Token, via, e.Op, e.Method, e.Path, e.Summary)
	}
	tw.Flush()
	return 0
}

// printRefusals prints a voter's refusal log.
func printRefusals(stdout io.Writer, rv state.RefusalsView, asJSON bool) int {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rv)
		return 0
	}
	fmt.Fprintf(stdout, "voter %s: %d refusals recorded, %d suppressed by the rate limits, %d pushed out by newer ones\n", rv.Voter, rv.Recorded, rv.Suppressed, rv.Dropped)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tCODE\tPRINCIPAL\tSOURCE\tPATH\tREASON")
	for _, list := range [][]*state.RefusalEntry{rv.Known, rv.Unknown, rv.Pending} {
		for _, e := range list {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s %s\t%s\n", e.Seq, e.Time.UTC().Format(time.RFC3339), e.Code, e.Principal, e.Source, e.Method, e.Path, e.Reason)
		}
	}
	tw.Flush()
	return 0
}

// runToken creates a named token: it prints the secret (give it to its user) and the line
// for the voters' token file (which holds only its hash).
func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, stop := dispatchHelp("token", args, stdout, stderr); stop {
		return code
	}
	fs := flag.NewFlagSet("token create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the token's name, as the audit log and overrides show it (required)")
	scope := fs.String("scope", "read", "read, write, or write limited to the checks whose id starts with a prefix and to a zone and the zones below it, by whole labels: write:check=web-,zone=example.com.")
	secretFile := fs.String("secret-file", "", "write the secret to this new file (mode 0600; an existing file is refused, not overwritten) and print only the line for the voters' -token-file, so that >> appends it to theirs")
	if code, stop := parseFlags(ctx, fs, args[1:], stdout, stderr); stop {
		return code
	}
	sc, err := control.ParseScope(*scope)
	if err != nil {
		fmt.Fprintf(stderr, "vigil token: %v\n", err)
		return 2
	}
	secret, line, err := control.NewToken(*name, sc)
	if err != nil {
		fmt.Fprintf(stderr, "vigil token: %v\n", err)
		return exitUsage
	}
	if *secretFile != "" {
		if err := writeNewSecret(*secretFile, secret); err != nil {
			fmt.Fprintf(stderr, "vigil token: %v\n", err)
			return exitFailure
		}
		fmt.Fprintln(stdout, line)
		return 0
	}
	fmt.Fprintf(stdout, "token (give it to %s; it is shown once):\n  %s\nline for every voter's -token-file (the secret's SHA-256 only):\n  %s\n", *name, secret, line)
	return 0
}

// writeNewSecret writes secret and a newline to path, a file it creates with mode 0600: an
// existing file (another token's secret, perhaps) is refused rather than overwritten.
func writeNewSecret(path, secret string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("-secret-file: %w (remove it first to replace it, or name a new file)", err)
	}
	if _, err := fmt.Fprintln(f, secret); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("-secret-file: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("-secret-file: %w", err)
	}
	return nil
}
