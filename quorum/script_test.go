package quorum

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The scenario scripts in testdata/*.txt tell the source articles' stories one command a line.
// A command followed by a "----" line is followed by the output it must print, up to a blank
// line. Run with VIGIL_REWRITE=1 to rewrite the expected outputs from what the code prints.
//
// Commands (times are offsets from the script's epoch, e.g. 30s, 1m30s):
//
//	policy [threshold=F] [min-reporters=N] [freshness=D] [hold=D] [inverted] [disabled]
//	expect <checker>...                    the checkers the assignment expects
//	location <name>                        select (or create) a location's table
//	report <checker> <region> healthy|unhealthy [heard=T] [seq=N] [latency=D] [reason="..."]
//	withdraw <checker>...                  the checkers withdraw their reports: gone from the table
//	heard <T> <checker>...                 the location hears these checkers make progress at T
//	eval <T>                               evaluate at T, print the explanation, keep the verdict
//	child <check> healthy|unhealthy|unknown
//	combine <T> <check>... [min=N] [inverted] [disabled]

// scriptEpoch is time zero of every script.
var scriptEpoch = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

func TestScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scripts in testdata")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) { runScript(t, file) })
	}
}

// location is one DNS location's table of reports and its last verdict.
type location struct {
	reports []Report
	prev    Verdict
}

// script is the state of one running script.
type script struct {
	t         *testing.T
	policy    Policy
	expected  []string
	locations map[string]*location
	current   *location
	children  map[string]Verdict
	combined  Verdict
}

func runScript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := &script{
		t:         t,
		policy:    Policy{HealthyThreshold: 0.18, MinReporters: 1, FreshnessWindow: 15 * time.Second, Hold: time.Minute},
		locations: map[string]*location{},
		children:  map[string]Verdict{},
	}
	s.current = s.location("default")
	lines := strings.Split(string(data), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if i == len(lines)-1 && trimmed == "" {
			break
		}
		out.WriteString(line + "\n")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		got := s.run(i+1, trimmed)
		var want []string
		hasWant := i+1 < len(lines) && lines[i+1] == "----"
		if hasWant {
			i++
			for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
				i++
				want = append(want, lines[i])
			}
		}
		if got != "" {
			out.WriteString("----\n" + got)
			if i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
				out.WriteString("\n")
			}
		}
		if os.Getenv("VIGIL_REWRITE") != "" {
			continue
		}
		if wantText := strings.Join(want, "\n"); strings.TrimSpace(got) != wantText {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", file, i+1, trimmed, got, wantText)
		}
	}
	if os.Getenv("VIGIL_REWRITE") != "" {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *script) location(name string) *location {
	l, ok := s.locations[name]
	if !ok {
		l = &location{}
		s.locations[name] = l
	}
	return l
}

// run executes one command and returns what it prints.
func (s *script) run(n int, line string) string {
	t := s.t
	fields := splitFields(t, n, line)
	cmd, args := fields[0], fields[1:]
	switch cmd {
	case "policy":
		for _, a := range args {
			k, v, _ := strings.Cut(a, "=")
			switch k {
			case "threshold":
				s.policy.HealthyThreshold = s.float(n, v)
			case "min-reporters":
				s.policy.MinReporters = s.int(n, v)
			case "freshness":
				s.policy.FreshnessWindow = s.duration(n, v)
			case "hold":
				s.policy.Hold = s.duration(n, v)
			case "inverted":
				s.policy.Inverted = true
			case "disabled":
				s.policy.Disabled = true
			default:
				t.Fatalf("line %d: unknown policy argument %q", n, a)
			}
		}
	case "expect":
		s.expected = args
	case "location":
		s.need(n, args, 1)
		s.current = s.location(args[0])
	case "report":
		s.need(n, args, 3)
		r := Report{Checker: args[0], Region: args[1], Healthy: s.health(n, args[2]), LastProgress: scriptEpoch}
		for _, a := range args[3:] {
			k, v, _ := strings.Cut(a, "=")
			switch k {
			case "heard":
				r.LastProgress = scriptEpoch.Add(s.duration(n, v))
			case "never-heard":
				r.LastProgress = time.Time{}
			case "seq":
				r.Sequence = uint64(s.int(n, v))
			case "latency":
				r.Latency = s.duration(n, v)
			case "reason":
				r.Reason = v
			default:
				t.Fatalf("line %d: unknown report argument %q", n, a)
			}
		}
		l := s.current
		if i := slices.IndexFunc(l.reports, func(o Report) bool { return o.Checker == r.Checker }); i >= 0 {
			l.reports[i] = r
		} else {
			l.reports = append(l.reports, r)
		}
	case "withdraw":
		s.need(n, args, 1)
		for _, id := range args {
			i := slices.IndexFunc(s.current.reports, func(o Report) bool { return o.Checker == id })
			if i < 0 {
				t.Fatalf("line %d: no report from %s at this location", n, id)
			}
			s.current.reports = slices.Delete(s.current.reports, i, i+1)
		}
	case "heard":
		s.need(n, args, 2)
		at := scriptEpoch.Add(s.duration(n, args[0]))
		for _, id := range args[1:] {
			i := slices.IndexFunc(s.current.reports, func(o Report) bool { return o.Checker == id })
			if i < 0 {
				t.Fatalf("line %d: no report from %s at this location", n, id)
			}
			s.current.reports[i].LastProgress = at
			s.current.reports[i].Sequence++
		}
	case "eval":
		s.need(n, args, 1)
		now := scriptEpoch.Add(s.duration(n, args[0]))
		l := s.current
		v := Evaluate(s.policy, l.reports, s.expected, l.prev, now)
		e := Explain(s.policy, l.reports, s.expected, l.prev, now)
		s.agree(n, v, e)
		l.prev = v
		return render(e)
	case "child":
		s.need(n, args, 2)
		var st State
		if err := st.UnmarshalText([]byte(args[1])); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		s.children[args[0]] = Verdict{State: st}
	case "combine":
		s.need(n, args, 2)
		now := scriptEpoch.Add(s.duration(n, args[0]))
		var ids []string
		var kids []Verdict
		minHealthy, inverted, disabled := 0, false, false
		for _, a := range args[1:] {
			k, v, _ := strings.Cut(a, "=")
			switch k {
			case "min":
				minHealthy = s.int(n, v)
			case "inverted":
				inverted = true
			case "disabled":
				disabled = true
			default:
				child, ok := s.children[a]
				if !ok {
					t.Fatalf("line %d: no child %q", n, a)
				}
				ids, kids = append(ids, a), append(kids, child)
			}
		}
		v := Combine(minHealthy, kids, inverted, disabled, s.combined, now)
		e := ExplainCombined(minHealthy, ids, kids, inverted, disabled, s.combined, now)
		s.agree(n, v, e)
		s.combined = v
		return render(e)
	default:
		t.Fatalf("line %d: unknown command %q", n, cmd)
	}
	return ""
}

// agree fails unless the compact verdict and the explanation say the same, and the explanation
// marshals to JSON.
func (s *script) agree(n int, v Verdict, e Explanation) {
	if e.State != v.State || e.Counts != v.Counts || !e.Since.Equal(v.Since) || !e.HeldSince.Equal(v.HeldSince) || e.Sentence != v.Sentence() {
		s.t.Errorf("line %d: explanation %+v disagrees with verdict %+v", n, e, v)
	}
	if _, err := json.Marshal(e); err != nil {
		s.t.Errorf("line %d: explanation does not marshal: %v", n, err)
	}
}

// render prints an explanation with times relative to the script's epoch.
func render(e Explanation) string {
	var b strings.Builder
	at := func(t time.Time) string { return "t=" + t.Sub(scriptEpoch).String() }
	serving := "served as healthy"
	if !e.ServedAsHealthy {
		serving = "not served"
	}
	fmt.Fprintf(&b, "%s (%s) since %s", e.State, serving, at(e.Since))
	if e.Held {
		b.WriteString(", held")
	}
	if !e.HeldSince.IsZero() {
		fmt.Fprintf(&b, ", short of reports since %s", at(e.HeldSince))
	}
	fmt.Fprintf(&b, "\nrule %s: %s\n", e.Rule, e.Sentence)
	c := e.Counts
	if e.Children != nil {
		fmt.Fprintf(&b, "children: healthy=%d (unknown=%d) unhealthy=%d\n", c.Healthy, c.Unknown, c.Unhealthy)
		for _, ch := range e.Children {
			fmt.Fprintf(&b, "  %s: %s, counted healthy=%t\n", ch.Check, ch.State, ch.CountedHealthy)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "counts: healthy=%d unhealthy=%d fresh=%d stale=%d never-heard=%d\n",
		c.Healthy, c.Unhealthy, c.Fresh, c.Stale, c.NeverHeard)
	for _, v := range e.Votes {
		exp := ""
		if !v.Expected {
			exp = " (not expected)"
		}
		fmt.Fprintf(&b, "  %s %s%s: %s\n", v.Checker, v.Region, exp, v.Why)
	}
	if len(e.NeverHeard) > 0 {
		fmt.Fprintf(&b, "  never heard: %s\n", strings.Join(e.NeverHeard, " "))
	}
	return b.String()
}

// splitFields splits a command line at spaces, keeping key="quoted value" together.
func splitFields(t *testing.T, n int, line string) []string {
	var fields []string
	var cur strings.Builder
	quoted := false
	for _, r := range line {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				fields = append(fields, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if quoted {
		t.Fatalf("line %d: unterminated quote", n)
	}
	if cur.Len() > 0 {
		fields = append(fields, cur.String())
	}
	return fields
}

func (s *script) need(n int, args []string, k int) {
	if len(args) < k {
		s.t.Fatalf("line %d: need at least %d arguments, got %q", n, k, args)
	}
}

func (s *script) health(n int, v string) bool {
	switch v {
	case "healthy":
		return true
	case "unhealthy":
		return false
	}
	s.t.Fatalf("line %d: want healthy or unhealthy, got %q", n, v)
	return false
}

func (s *script) duration(n int, v string) time.Duration {
	d, err := time.ParseDuration(v)
	if err != nil {
		s.t.Fatalf("line %d: %v", n, err)
	}
	return d
}

func (s *script) int(n int, v string) int {
	i, err := strconv.Atoi(v)
	if err != nil {
		s.t.Fatalf("line %d: %v", n, err)
	}
	return i
}

func (s *script) float(n int, v string) float64 {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		s.t.Fatalf("line %d: %v", n, err)
	}
	return f
}
