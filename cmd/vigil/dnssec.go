package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/internal/safetext"
)

// runDNSSEC reads and rolls a signed zone's keys through the control plane:
//
//	vigil dnssec ds ZONE        the DS records to give the parent zone
//	vigil dnssec keys ZONE      every key: tag, role, state, timeline
//	vigil dnssec rollover ZONE  start a rollover (-role zsk|ksk|csk), or -finish one (-force:
//	                            before the TTLs it waits for have passed)
func runDNSSEC(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, stop := dispatchHelp("dnssec", args, stdout, stderr); stop {
		return code
	}
	verb := args[0]
	fs := flag.NewFlagSet("dnssec "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clientFlags
	cf.register(fs)
	role := fs.String("role", "zsk", "rollover: the key rolled, zsk, ksk or csk")
	finish := fs.Bool("finish", false, "rollover: end a KSK or CSK rollover (once the parent serves the new DS; refused before the time vigil dnssec keys shows)")
	force := fs.Bool("force", false, "rollover -finish: end it before the TTLs it waits for have passed (resolvers holding the old DS fail to validate; the audit log records it)")
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	if code, stop := parseFlags(ctx, fs, reorderFlags(args[1:]), stdout, stderr); stop {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "vigil dnssec %s: one ZONE is required\n", verb)
		return 2
	}
	zone := fs.Arg(0)
	cf.resolve(fs)
	if *force && (verb != "rollover" || !*finish) {
		fmt.Fprintln(stderr, "vigil dnssec: -force applies to rollover -finish only")
		return 2
	}
	c, err := cf.client()
	if err != nil {
		return usageErr(stderr, "dnssec "+verb, err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if verb == "rollover" {
		res, err := c.Rollover(ctx, zone, state.RolloverRequest{Role: dnssec.Role(*role), Finish: *finish, Force: *force})
		if err != nil {
			return cf.fail(stderr, "dnssec rollover", err)
		}
		fmt.Fprintf(stdout, "%s: %s rollover committed at index %d; see vigil dnssec keys %s\n", zone, *role, res.Index, zone)
		return 0
	}
	v, err := c.DNSSEC(ctx, zone)
	if err != nil {
		return cf.fail(stderr, "dnssec "+verb, err)
	}
	safetext.EscapeStrings(&v) // what the server says is printed: no line breaks or escapes

	if verb == "ds" {
		if len(v.DS) == 0 {
			fmt.Fprintf(stderr, "vigil dnssec ds: %s has no published key-signing key (enabled: %v)\n", v.Zone, v.Enabled)
			return 1
		}
		for _, ds := range v.DS {
			fmt.Fprintln(stdout, ds)
		}
		return 0
	}
	fmt.Fprintf(stdout, "%s signed: %v, DNSKEY TTL %ds, denial %s\n", v.Zone, v.Enabled, v.DNSKEYTTL, v.Denial)
	for _, k := range v.Keys {
		fmt.Fprintf(stdout, "  %5d %s %-9s published %s, signs from %s", k.Tag, k.Role, k.State,
			k.Publish.Format(time.RFC3339), k.Activate.Format(time.RFC3339))
		if k.Retire != nil {
			fmt.Fprintf(stdout, ", retires %s", k.Retire.Format(time.RFC3339))
		}
		if k.Remove != nil {
			fmt.Fprintf(stdout, ", removed %s", k.Remove.Format(time.RFC3339))
		}
		if k.FinishAfter != nil {
			fmt.Fprintf(stdout, ", rollover may finish from %s", k.FinishAfter.Format(time.RFC3339))
		}
		fmt.Fprintln(stdout)
	}
	return 0
}

// reorderFlags moves flags before the positional arguments, so that "ds ZONE -server URL"
// parses as "ds -server URL ZONE".
func reorderFlags(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !strings.HasPrefix(a, "-") || a == "-":
			pos = append(pos, a)
		case strings.Contains(a, "=") || a == "-finish" || a == "--finish" || a == "-force" || a == "--force":
			flags = append(flags, a)
		default:
			flags = append(flags, a)
			if i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		}
	}
	return append(flags, pos...)
}
