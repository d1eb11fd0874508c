package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-dns/vigil/internal/safetext"
	"github.com/vigil-dns/vigil/status"
	"github.com/vigil-dns/vigil/status/verify"
)

// statusUsage is the help of vigil status.
const statusUsage = `usage: vigil status [--addr HOST:PORT] [--json] VIEW [ARGS]

Prints a node's status API as tables (or as its JSON with --json). Views:
  verdicts [STATE]   a location's verdicts, one column per region (STATE: healthy, unhealthy, unknown)
  check ID           one check's verdict with its evidence: each checker's vote or why it does not count
  checkers           the checkers as a location hears them: fresh, or stale since when
  answer NAME TYPE   what a location would answer now, with the policy and last resort
  probes             a checker's assigned checks with their latest results and self-health
  members            the node's configuration and version, and the pool as it sees it
  network [FILTER]   every location's verdict of every check side by side, where they disagree
                     and why (FILTER: all, disagree, unhealthy; with --search, --cursor, --limit)
  history CHECK      one check's verdict changes at the location and its availability
                     over 1 h, 24 h and 7 days
  answers [NAME]     the latest changes of what record sets answer from at the location
  dns [SEARCH]       what a location answers now for each record set with a health check:
                     the answer, its rule and whether last resort is in force (with --limit)
  verification       a checker's answer verification: each location's answers against its
                     own verdicts, and the measured failover times (in vigil dev: --addr
                     127.0.0.1:7711)

flags:
`

// statusArgs returns how many arguments a view takes, at least and at most; ok is false for
// an unknown view.
func statusArgs(view string) (least, most int, ok bool) {
	switch view {
	case "verdicts":
		return 0, 1, true
	case "check":
		return 1, 1, true
	case "answer":
		return 2, 2, true
	case "checkers", "probes", "members", "verification":
		return 0, 0, true
	case "network", "answers", "dns":
		return 0, 1, true
	case "history":
		return 1, 1, true
	}
	return 0, 0, false
}

// statusViews lists the views of vigil status for its help; statusArgs checks their
// arguments.
func statusViews() []command {
	v := func(name, usage, summary, example string) command {
		return command{name: name, summary: summary, usage: "vigil status [flags] " + usage, example: "vigil status " + example}
	}
	return []command{
		v("verdicts", "verdicts [STATE]", "a location's verdicts, one column per region (STATE: healthy, unhealthy, unknown)", "verdicts unhealthy"),
		v("check", "check ID", "one check's verdict with its evidence: each checker's vote or why it does not count", "check web-us"),
		v("checkers", "checkers", "the checkers as a location hears them: fresh, or stale since when", "checkers"),
		v("answer", "answer NAME TYPE", "what a location would answer now, with the policy and last resort", "answer www.demo.vigil.test A"),
		v("probes", "probes", "a checker's assigned checks with their latest results and self-health", "-addr 127.0.0.1:7711 probes"),
		v("members", "members", "the node's configuration and version, and the pool as it sees it", "members"),
		v("network", "network [all|disagree|unhealthy]", "every location's verdict of every check side by side, where they disagree and why", "network disagree -search web -limit 50"),
		v("history", "history CHECK", "one check's verdict changes at the location and its availability over 1 h, 24 h and 7 days", "history web-us"),
		v("answers", "answers [NAME]", "the latest changes of what record sets answer from at the location", "answers www.demo.vigil.test"),
		v("dns", "dns [SEARCH]", "what a location answers now for each record set with a health check: the answer, its rule and whether last resort is in force", "dns www"),
		v("verification", "verification", "a checker's answer verification: each location's answers against its own verdicts, and the measured failover times", "-addr 127.0.0.1:7711 verification"),
	}
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, statusUsage)
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:7701", "the node's status API (host:port or URL)")
	asJSON := fs.Bool("json", false, "print the API's JSON instead of tables")
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	var page pageFlags
	fs.StringVar(&page.search, "search", "", "network: only checks whose id contains this; dns: only record sets whose name contains this")
	fs.StringVar(&page.cursor, "cursor", "", "network: start after this check (the last page's cursor)")
	fs.IntVar(&page.limit, "limit", 100, "network: checks a page; dns: record sets listed; 1 to 1000")
	// Flags may come before, between or after the view's arguments.
	var pos []string
	for rest := args; ; {
		path := "status"
		if _, _, ok := statusArgs(firstOr(pos, "")); ok {
			path = "status " + pos[0]
		}
		if code, stop := parseFlagsAs(ctx, path, fs, rest, stdout, stderr); stop {
			return code
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		pos, rest = append(pos, rest[0]), rest[1:]
	}
	if len(pos) == 0 {
		fs.Usage()
		return 2
	}
	view, vargs := pos[0], pos[1:]
	least, most, ok := statusArgs(view)
	if !ok || len(vargs) < least || len(vargs) > most {
		if !ok {
			fmt.Fprintf(stderr, "vigil status: unknown view %q\n\n", view)
		} else {
			fmt.Fprintf(stderr, "vigil status %s: wrong number of arguments\n\n", view)
		}
		fs.Usage()
		return 2
	}
	c, err := status.NewClient(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "vigil status: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := printStatus(ctx, c, view, vargs, page, *asJSON, stdout); err != nil {
		// The client's errors start with "status:", which names the command already.
		msg := strings.TrimPrefix(err.Error(), "status: ")
		if view == "probes" && strings.Contains(msg, "not a checker") {
			msg += "; ask a checker's address (in vigil dev: --addr 127.0.0.1:7711)"
		}
		fmt.Fprintf(stderr, "vigil status: %s\n", safetext.Escape(msg))
		if fix := statusFix(err, *addr); fix != "" {
			fmt.Fprintf(stderr, "  fix: %s\n", fix)
		}
		return 1
	}
	return 0
}

// statusFix returns what to do about err, a failed call to the status API at addr, or ""
// when -addr cannot change it.
func statusFix(err error, addr string) string {
	msg := err.Error()
	switch {
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(msg, "connection refused"),
		errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "Client.Timeout"):
		return "no node's status API answers at " + addr + ": is the node running? give -addr its -http address " +
			"(vigil agent's default 127.0.0.1:7701; vigil dev: locations 127.0.0.1:7701-7703, checkers 7711-7733)"
	case strings.Contains(msg, "no such host"):
		return "the host of -addr does not resolve: check -addr"
	case strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return "the status API speaks plain HTTP: give -addr host:port or http://host:port"
	case strings.Contains(msg, "not a DNS location"):
		return "ask a location's status API with -addr (vigil dev: 127.0.0.1:7701-7703); vigil status members says what this node runs"
	}
	return ""
}

// pageFlags are the network view's search and page.
type pageFlags struct {
	search, cursor string
	limit          int
}

// printStatus fetches one view and prints it.
func printStatus(ctx context.Context, c *status.Client, view string, args []string, page pageFlags, asJSON bool, w io.Writer) error {
	now := time.Now()
	var (
		v     any
		err   error
		table func() error
		text  any // a pointer to what table prints, whose strings are escaped first
	)
	switch view {
	case "verdicts":
		state := ""
		if len(args) > 0 {
			state = args[0]
		}
		var l status.VerdictList
		l, err = c.Verdicts(ctx, state)
		v, text, table = l, &l, func() error { return status.WriteVerdicts(w, l, now) }
	case "check":
		var e status.CheckEvidence
		e, err = c.Check(ctx, args[0])
		v, text, table = e, &e, func() error { return status.WriteCheck(w, e, now) }
	case "checkers":
		var l status.CheckerList
		l, err = c.Checkers(ctx)
		v, text, table = l, &l, func() error { return status.WriteCheckers(w, l, now) }
	case "answer":
		var a status.Answer
		a, err = c.Answer(ctx, args[0], args[1])
		v, text, table = a, &a, func() error { return status.WriteAnswer(w, a) }
	case "probes":
		var l status.ProbeList
		l, err = c.Probes(ctx)
		v, text, table = l, &l, func() error { return status.WriteProbes(w, l, now) }
	case "network":
		filter := ""
		if len(args) > 0 {
			filter = args[0]
		}
		var nv status.NetworkView
		nv, err = c.Network(ctx, filter, page.search, page.cursor, page.limit)
		v, text, table = nv, &nv, func() error { return status.WriteNetwork(w, nv, now) }
	case "history":
		var h status.CheckHistory
		h, err = c.History(ctx, args[0])
		v, text, table = h, &h, func() error { return status.WriteHistory(w, h, now) }
	case "answers":
		name := ""
		if len(args) > 0 {
			name = args[0]
		}
		var a status.AnswerHistory
		a, err = c.AnswerHistory(ctx, name)
		v, text, table = a, &a, func() error { return status.WriteAnswerHistory(w, a, now) }
	case "dns":
		q := page.search
		if len(args) > 0 {
			q = args[0]
		}
		var l status.AnswerList
		l, err = c.Answers(ctx, q, page.limit)
		v, text, table = l, &l, func() error { return status.WriteAnswers(w, l) }
	case "verification":
		var r verify.Report
		if err = c.Get(ctx, "/v1/verification", &r); err != nil {
			err = noVerification(ctx, c, err)
		}
		v, text, table = r, &r, func() error { return verify.WriteReport(w, r, now) }
	case "members":
		v, text, table, err = fetchMembers(ctx, c, w)
	}
	if err != nil {
		return err
	}
	return writeView(w, v, text, table, asJSON)
}

// writeView prints a view fetched: v as indented JSON, or else its table, once every string
// of text (a pointer to what the table prints) is escaped.
func writeView(w io.Writer, v, text any, table func() error, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	// Nodes report text of others (probe errors, reasons, names): escape every string so
	// that none can add a row or send the terminal an escape sequence.
	safetext.EscapeStrings(text)
	return table()
}

// fetchMembers fetches the members view, a node's own information and its members, as
// printStatus takes a view: what to encode, a pointer to its text, and the table's writer.
func fetchMembers(ctx context.Context, c *status.Client, w io.Writer) (v, text any, table func() error, err error) {
	var n status.NodeInfo
	var l status.MemberList
	if n, err = c.Node(ctx); err == nil {
		l, err = c.Members(ctx)
	}
	v, table = struct {
		Node    status.NodeInfo   `json:"node"`
		Members status.MemberList `json:"members"`
	}{n, l}, func() error { return status.WriteMembers(w, n, l) }
	text = &struct {
		N *status.NodeInfo
		L *status.MemberList
	}{&n, &l}
	return v, text, table, err
}

// noVerification turns the 404 of a node that runs no answer verifier into what to ask
// instead, naming what the node is (from GET /v1/node); other errors pass as they are.
func noVerification(ctx context.Context, c *status.Client, err error) error {
	var he *status.HTTPError
	if !errors.As(err, &he) || he.Code != http.StatusNotFound {
		return err
	}
	what := "it runs no checker"
	if n, nerr := c.Node(ctx); nerr == nil {
		switch {
		case slices.Contains(n.Identity.Roles, "checker"):
			what = "it is a checker started without -verify-interval"
		case slices.Contains(n.Identity.Roles, "location"):
			what = "it is a location"
		case len(n.Identity.Roles) > 0:
			what = "it runs " + strings.Join(n.Identity.Roles, ", ")
		}
	}
	return fmt.Errorf("this node runs no answer verification: %s; ask a checker started with -verify-interval "+
		"(vigil status -addr CHECKER:7701 verification)", what)
}
