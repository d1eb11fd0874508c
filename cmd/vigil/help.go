package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Exit codes, the same for every command.
const (
	exitOK      = 0 // the command did what it was asked
	exitFailure = 1 // it failed at run time
	exitUsage   = 2 // it was asked wrongly: unknown flag or subcommand, bad arguments
)

// isHelpArg reports whether a is one of the ways to ask for help.
func isHelpArg(a string) bool {
	return a == "-h" || a == "-help" || a == "--help" || a == "help"
}

// lookup returns the command or subcommand named by path ("dnssec", "dnssec ds").
func lookup(path string) (command, bool) {
	names := strings.Fields(path)
	list := commands()
	var found command
	for i, n := range names {
		ok := false
		for _, c := range list {
			if c.name == n {
				found, ok = c, true
				break
			}
		}
		if !ok {
			return command{}, false
		}
		if i < len(names)-1 {
			list = found.subs
		}
	}
	return found, len(names) > 0
}

// printHelp writes the help of the command at path: its purpose, usage, subcommands,
// flags (grouped when the command groups them) and example.
func printHelp(w io.Writer, path string, fs *flag.FlagSet) {
	c, ok := lookup(path)
	if !ok {
		// Every command and subcommand has an entry in commands(); TestHelp fails otherwise.
		fmt.Fprintf(w, "vigil %s\n", path)
		if fs != nil {
			fs.SetOutput(w)
			fs.PrintDefaults()
		}
		return
	}
	fmt.Fprintf(w, "vigil %s: %s\n\n", path, c.summary)
	printUsageLines(w, "Usage:", c.usage)
	if c.detail != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.detail, "\n"))
	}
	if len(c.subs) > 0 {
		fmt.Fprintln(w, "\nSubcommands:")
		for _, s := range c.subs {
			fmt.Fprintf(w, "  %-13s %s\n", s.name, s.summary)
		}
		fmt.Fprintf(w, "Run vigil %s SUBCOMMAND -h for each one's flags.\n", path)
	}
	if fs != nil && hasFlags(fs) {
		printFlagGroups(w, fs, c.groups)
	}
	fmt.Fprintf(w, "\nExample:\n%s\n", indent(strings.TrimRight(c.example, "\n")))
}

// printUsageLines writes usage lines as "label first" and the others aligned under it.
func printUsageLines(w io.Writer, label, usage string) {
	for i, l := range strings.Split(strings.TrimSpace(usage), "\n") {
		if i > 0 {
			label = strings.Repeat(" ", len(label))
		}
		fmt.Fprintf(w, "%s %s\n", label, strings.TrimSpace(l))
	}
}

func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// flagGroups places a command's flags in named groups, in order; a flag no group names is
// printed under "other".
type flagGroups struct {
	order []string
	of    map[string]string // flag name -> group
}

// printFlagGroups writes fs's flags, in the groups of g (all under "Flags" when g has none).
func printFlagGroups(w io.Writer, fs *flag.FlagSet, g flagGroups) {
	byGroup := map[string][]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) {
		grp := g.of[f.Name]
		if grp == "" {
			grp = "other"
		}
		byGroup[grp] = append(byGroup[grp], f)
	})
	if len(g.of) == 0 {
		own, client := splitClientFlags(byGroup["other"])
		if len(own) > 0 {
			fmt.Fprintln(w, "\nFlags:")
			printFlags(w, own)
		}
		if len(client) > 0 {
			fmt.Fprintln(w, "\nFlags, the client configuration (each also a VIGIL_ variable; a flag wins):")
			printFlags(w, client)
		}
		return
	}
	for _, grp := range append(append([]string(nil), g.order...), "other") {
		if len(byGroup[grp]) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nFlags, %s:\n", grp)
		printFlags(w, byGroup[grp])
		delete(byGroup, grp)
	}
}

// clientFlagNames are the flags of the one client configuration (client.go), which every
// command that talks to the control plane takes: its help lists them apart from its own.
var clientFlagNames = []string{"server", "token-file", "tls-ca", "tls-cert", "tls-key"}

// splitClientFlags returns flags without the client configuration's, and those, when flags
// hold all of them; else flags and nil.
func splitClientFlags(flags []*flag.Flag) (own, client []*flag.Flag) {
	for _, f := range flags {
		if slices.Contains(clientFlagNames, f.Name) {
			client = append(client, f)
		} else {
			own = append(own, f)
		}
	}
	if len(client) != len(clientFlagNames) {
		return flags, nil
	}
	return own, client
}

// printFlags writes flags as flag.PrintDefaults does: name, value type, usage, default.
func printFlags(w io.Writer, flags []*flag.Flag) {
	for _, f := range flags {
		kind, usage := flag.UnquoteUsage(f)
		line := "  -" + f.Name
		if kind != "" {
			line += " " + kind
		}
		fmt.Fprintln(w, line)
		usage = strings.ReplaceAll(usage, "\n", "\n    \t")
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			if kind == "string" {
				usage += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
		}
		fmt.Fprintf(w, "    \t%s\n", usage)
	}
}

// flagSetsKey is the context key of a function that parseFlags hands each flag set to
// before it parses: tests use it to learn the flags of every command.
type flagSetsKey struct{}

// withFlagSets returns ctx carrying record, which parseFlags calls with every flag set.
func withFlagSets(ctx context.Context, record func(path string, fs *flag.FlagSet)) context.Context {
	return context.WithValue(ctx, flagSetsKey{}, record)
}

// parseFlags parses args into fs, the flags of the command whose path is fs.Name(). When
// stop is true the command returns code at once: 0 after -h (its help is on stdout), 2 on a
// flag it does not know (the error and the usage lines are on stderr).
func parseFlags(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, stop bool) {
	return parseFlagsAs(ctx, fs.Name(), fs, args, stdout, stderr)
}

// parseFlagsAs is parseFlags for the command at path, for a flag set several subcommands
// share.
func parseFlagsAs(ctx context.Context, path string, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, stop bool) {
	if record, ok := ctx.Value(flagSetsKey{}).(func(string, *flag.FlagSet)); ok {
		record(path, fs)
	}
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(stderr)
	switch {
	case err == nil:
		return exitOK, false
	case errors.Is(err, flag.ErrHelp):
		printHelp(stdout, path, fs)
		return exitOK, true
	}
	fmt.Fprintf(stderr, "vigil %s: %v\n", path, err)
	shortUsage(stderr, path)
	return exitUsage, true
}

// newFlagSet returns the flag set of the command at path, whose Usage writes the command's
// usage lines to stderr.
func newFlagSet(path string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { shortUsage(stderr, path) }
	return fs
}

// shortUsage writes the usage lines of the command at path and where its help is.
func shortUsage(w io.Writer, path string) {
	if c, ok := lookup(path); ok {
		printUsageLines(w, "usage:", c.usage)
	}
	fmt.Fprintf(w, "Run vigil %s -h for its flags and an example.\n", path)
}

// dispatchHelp handles the arguments of a command made of subcommands before it dispatches
// them: none (a usage error), a request for help (its help on stdout) or an unknown
// subcommand (the error, a close name, and the subcommands). stop is false when args[0] is
// one of its subcommands.
func dispatchHelp(path string, args []string, stdout, stderr io.Writer) (code int, stop bool) {
	c, _ := lookup(path)
	switch {
	case len(args) == 0:
		fmt.Fprintf(stderr, "vigil %s: name a subcommand\n", path)
		shortUsage(stderr, path)
		return exitUsage, true
	case isHelpArg(args[0]):
		printHelp(stdout, path, nil)
		return exitOK, true
	}
	for _, s := range c.subs {
		if s.name == args[0] {
			return exitOK, false
		}
	}
	return unknownSub(stderr, path, args[0]), true
}

// unknownSub writes that name is not a subcommand of the command at path, with a close
// name and the usage, and returns the usage exit code.
func unknownSub(stderr io.Writer, path, name string) int {
	c, _ := lookup(path)
	var names []string
	for _, s := range c.subs {
		names = append(names, s.name)
	}
	fmt.Fprintf(stderr, "vigil %s: unknown subcommand %q%s (one of %s)\n", path, name, didYouMean(name, names), strings.Join(names, ", "))
	shortUsage(stderr, path)
	return exitUsage
}

// didYouMean returns `; did you mean "x"?` for the name closest to s when it is close
// enough to be a typo, else "".
func didYouMean(s string, names []string) string {
	best, bestD := "", 0
	for _, n := range names {
		d := editDistance(s, n)
		if best == "" || d < bestD {
			best, bestD = n, d
		}
	}
	limit := 1 // a typo: one letter wrong, missing or extra, or two swapped in a longer name
	if len(s) > 3 {
		limit = max(2, len(s)/3)
	}
	switch {
	case best == "":
		return ""
	case bestD <= limit && bestD < len(s), len(s) >= 3 && strings.HasPrefix(best, s):
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// firstOr returns list[0], or def when list is empty.
func firstOr(list []string, def string) string {
	if len(list) == 0 {
		return def
	}
	return list[0]
}
