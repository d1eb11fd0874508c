package main

import (
	"bytes"
	"context"
	"flag"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// runCaptured runs vigil with args and returns its exit code, stdout, stderr and the flag
// sets the command parsed, by the path of the command each belongs to.
func runCaptured(ctx context.Context, args ...string) (int, string, string, map[string][]*flag.FlagSet) {
	sets := map[string][]*flag.FlagSet{}
	ctx = withFlagSets(ctx, func(path string, fs *flag.FlagSet) { sets[path] = append(sets[path], fs) })
	var out, errOut bytes.Buffer
	code := run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String(), sets
}

// canceled returns a canceled context: a command that wrongly went on to run stops at once.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestHelp walks every command and subcommand of the table run dispatches from: each
// answers -h, -help and --help on stdout with exit status 0, its purpose, usage, every flag
// and an example; each refuses an unknown flag with exit status 2.
func TestHelp(t *testing.T) {
	type entry struct {
		path []string
		c    command
	}
	var all []entry
	for _, c := range commands() {
		all = append(all, entry{[]string{c.name}, c})
		for _, s := range c.subs {
			all = append(all, entry{[]string{c.name, s.name}, s})
		}
	}
	if len(all) < 40 {
		t.Fatalf("the table lists %d commands and subcommands; want every one", len(all))
	}
	for _, e := range all {
		path := strings.Join(e.path, " ")
		t.Run(strings.ReplaceAll(path, " ", "_"), func(t *testing.T) {
			if e.c.summary == "" || e.c.usage == "" || e.c.example == "" {
				t.Fatalf("vigil %s: the table needs its summary, usage and example", path)
			}
			for _, h := range []string{"-h", "-help", "--help"} {
				code, out, errOut, sets := runCaptured(canceled(), append(append([]string(nil), e.path...), h)...)
				if code != 0 || errOut != "" {
					t.Fatalf("vigil %s %s: exit %d, stderr %q; want 0 and the help on stdout", path, h, code, errOut)
				}
				for _, want := range []string{e.c.summary, "Usage: vigil " + e.path[0], "Example:", strings.Split(e.c.example, "\n")[0]} {
					if !strings.Contains(out, want) {
						t.Errorf("vigil %s %s: help lacks %q:\n%s", path, h, want, out)
					}
				}
				for _, fs := range sets[path] {
					fs.VisitAll(func(f *flag.Flag) {
						if !strings.Contains(out, "\n  -"+f.Name+"\n") && !strings.Contains(out, "\n  -"+f.Name+" ") {
							t.Errorf("vigil %s %s: help lacks its flag -%s", path, h, f.Name)
						}
					})
				}
				for _, s := range e.c.subs {
					if !strings.Contains(out, "  "+s.name+" ") {
						t.Errorf("vigil %s %s: help lacks its subcommand %s", path, h, s.name)
					}
				}
			}
			if len(e.c.groups.of) > 0 {
				_, out, _, _ := runCaptured(canceled(), append(append([]string(nil), e.path...), "-h")...)
				if strings.Contains(out, "Flags, other:") {
					t.Errorf("vigil %s -h: flags without a group; name their group in its flagGroups:\n%s", path, out)
				}
			}
			// vigil help CMD SUB is vigil CMD SUB -h.
			_, want, _, _ := runCaptured(canceled(), append(append([]string(nil), e.path...), "-h")...)
			code, out, _, _ := runCaptured(canceled(), append([]string{"help"}, e.path...)...)
			if code != 0 || out != want {
				t.Errorf("vigil help %s: exit %d, output differs from vigil %s -h:\n%s", path, code, path, out)
			}
			code, _, errOut, _ := runCaptured(canceled(), append(append([]string(nil), e.path...), "-no-such-flag")...)
			if code != 2 || !strings.Contains(errOut, "no-such-flag") {
				t.Errorf("vigil %s -no-such-flag: exit %d, stderr %q; want 2 and the flag named", path, code, errOut)
			}
		})
	}
}

// TestHelpCommandList checks that vigil alone and vigil help list every command with its
// purpose, and that an unknown command or subcommand is a usage error with a close name.
func TestHelpCommandList(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{{nil, 2}, {[]string{"help"}, 0}, {[]string{"-h"}, 0}, {[]string{"--help"}, 0}} {
		code, out, _, _ := runCaptured(canceled(), tc.args...)
		if code != tc.code {
			t.Errorf("vigil %v: exit %d, want %d", tc.args, code, tc.code)
		}
		for _, c := range commands() {
			if !strings.Contains(out, "  "+c.name+" ") || !strings.Contains(out, c.summary) {
				t.Errorf("vigil %v: the list lacks %s and its purpose", tc.args, c.name)
			}
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lod"}, `did you mean "load"`},
		{[]string{"stauts"}, `did you mean "status"`},
		{[]string{"dnssec", "dss"}, `did you mean "ds"`},
		{[]string{"load", "writs"}, `did you mean "writes"`},
		{[]string{"dev", "faults2"}, `did you mean "faults"`},
		{[]string{"token", "crate"}, `did you mean "create"`},
	} {
		code, _, errOut, _ := runCaptured(canceled(), tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("vigil %v: exit %d, stderr %q; want 2 and %s", tc.args, code, errOut, tc.want)
		}
	}
	for _, args := range [][]string{{"load"}, {"dnssec"}, {"token"}, {"tls"}, {"override"}, {"shard"}} {
		if code, _, _, _ := runCaptured(canceled(), args...); code != 2 {
			t.Errorf("vigil %v without a subcommand: exit %d, want 2", args, code)
		}
	}
}

// TestVersionFlag checks that vigil --version and -version print what vigil version
// prints: the version, the commit and the Go version.
func TestVersionFlag(t *testing.T) {
	code, want, _, _ := runCaptured(canceled(), "version")
	if code != 0 || !strings.Contains(want, "vigil "+buildVersion()) || !strings.Contains(want, "commit ") || !strings.Contains(want, runtime.Version()) {
		t.Fatalf("vigil version: exit %d, %q; want the version, the commit and %s", code, want, runtime.Version())
	}
	for _, f := range []string{"--version", "-version"} {
		code, out, errOut, _ := runCaptured(canceled(), f)
		if code != 0 || out != want || errOut != "" {
			t.Errorf("vigil %s: exit %d, stdout %q, stderr %q; want 0 and %q", f, code, out, errOut, want)
		}
	}
	if code, _, _, _ := runCaptured(canceled(), "version", "extra"); code != 2 {
		t.Errorf("vigil version extra: exit %d, want 2", code)
	}
}

func TestDidYouMean(t *testing.T) {
	names := []string{"agent", "apply", "audit", "status", "load"}
	for s, want := range map[string]string{"aply": "apply", "statsu": "status", "agnet": "agent", "zzzzzz": "", "x": ""} {
		got := didYouMean(s, names)
		if (want == "") != (got == "") || (want != "" && !strings.Contains(got, `"`+want+`"`)) {
			t.Errorf("didYouMean(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestHelpGroupsClientFlags: every command that talks to the control plane lists the flags of
// the one client configuration in a group of their own, after its own flags; at least apply,
// override set, audit, dnssec ds, tsig list, externaldns, load writes and voters list do.
func TestHelpGroupsClientFlags(t *testing.T) {
	const heading = "\nFlags, the client configuration (each also a VIGIL_ variable; a flag wins):\n"
	var grouped []string
	for _, c := range commands() {
		paths := [][]string{{c.name}}
		for _, s := range c.subs {
			paths = append(paths, []string{c.name, s.name})
		}
		for _, p := range paths {
			path := strings.Join(p, " ")
			_, out, _, sets := runCaptured(canceled(), append(append([]string(nil), p...), "-h")...)
			has := false
			for _, fs := range sets[path] {
				has = has || fs.Lookup("server") != nil && fs.Lookup("token-file") != nil
			}
			if !has {
				continue
			}
			own, client, ok := strings.Cut(out, heading)
			if !ok {
				t.Errorf("vigil %s -h: no group of the client configuration's flags:\n%s", path, out)
				continue
			}
			for _, f := range []string{"server", "token-file", "tls-ca", "tls-cert", "tls-key"} {
				if strings.Contains(own, "\n  -"+f+" ") || !strings.Contains(client, "\n  -"+f+" ") && !strings.HasPrefix(client, "  -"+f+" ") {
					t.Errorf("vigil %s -h: -%s is not in the client configuration's group:\n%s", path, f, out)
				}
			}
			grouped = append(grouped, path)
		}
	}
	for _, want := range []string{"apply", "override set", "audit", "dnssec ds", "tsig list", "externaldns", "load writes", "voters list"} {
		if !slices.Contains(grouped, want) {
			t.Errorf("vigil %s -h does not group the client configuration's flags (grouped: %v)", want, grouped)
		}
	}
}
