package history

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// t0 is a fixed start, at an hour's boundary.
var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func change(id string, at time.Time, from, to string) Change {
	return Change{Check: id, At: at, From: from, To: to, Healthy: 1, Fresh: 3, Stale: 6}
}

func avail(t *testing.T, h CheckHistory, w string) Availability {
	t.Helper()
	for _, a := range h.Availability {
		if a.Window == w {
			return a
		}
	}
	t.Fatalf("no window %s in %+v", w, h.Availability)
	return Availability{}
}

// TestAvailability: healthy 30 min, unhealthy 15 min, healthy 15 min: 75% over the hour,
// the day and the week; then two hours more healthy: the hour is all healthy.
func TestAvailability(t *testing.T) {
	s, err := Open(Options{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	at := t0
	must(t, s.Record([]Change{change("www", at, StateNone, StateHealthy)}, nil))
	at = at.Add(30 * time.Minute)
	must(t, s.Record([]Change{change("www", at, StateHealthy, StateUnhealthy)}, nil))
	at = at.Add(15 * time.Minute)
	must(t, s.Record([]Change{change("www", at, StateUnhealthy, StateHealthy)}, nil))
	at = at.Add(15 * time.Minute)
	h, ok := s.Check("www", at)
	if !ok {
		t.Fatal("no history")
	}
	for _, w := range []string{"1h", "24h", "7d"} {
		a := avail(t, h, w)
		if a.Observed != time.Hour || a.Healthy != 45*time.Minute || a.Ratio != 0.75 {
			t.Errorf("%s: %+v, want 45m healthy of 1h", w, a)
		}
	}
	if len(h.Changes) != 3 || h.Changes[0].From != StateUnhealthy || h.Changes[2].From != StateNone {
		t.Errorf("changes, newest first: %+v", h.Changes)
	}
	h, _ = s.Check("www", at.Add(2*time.Hour))
	if a := avail(t, h, "1h"); a.Ratio != 1 || a.Observed < 59*time.Minute {
		t.Errorf("1h after two healthy hours: %+v", a)
	}
	if a := avail(t, h, "24h"); a.Observed != 3*time.Hour || a.Healthy != 165*time.Minute {
		t.Errorf("24h: %+v", a)
	}
	h, _ = s.Check("www", at.Add(8*24*time.Hour))
	if a := avail(t, h, "7d"); a.Ratio != 1 || a.Observed > 7*24*time.Hour {
		t.Errorf("7d after 8 days: %+v", a)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReopen: changes survive a restart; the time the location was down is not observed.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.log")
	s, err := Open(Options{Path: path}, t0)
	must(t, err)
	must(t, s.Record([]Change{change("www", t0, StateNone, StateHealthy)}, []AnswerChange{{Name: "www.x.", Type: "A", At: t0, To: []string{"192.0.2.1"}}}))
	for m := range 10 {
		must(t, s.Mark(t0.Add(time.Duration(m+1)*time.Minute)))
	}
	must(t, s.Close())
	// Down for 20 minutes.
	s, err = Open(Options{Path: path}, t0.Add(30*time.Minute))
	must(t, err)
	defer s.Close()
	if got := s.State("www"); got != StateHealthy {
		t.Fatalf("state after reopen: %q", got)
	}
	h, _ := s.Check("www", t0.Add(40*time.Minute))
	if a := avail(t, h, "1h"); a.Observed != 20*time.Minute || a.Ratio != 1 {
		t.Errorf("after a 20-minute downtime: %+v, want 20m observed (10 before, 10 after)", a)
	}
	if as := s.Answers("www.x"); len(as) != 1 || as[0].To[0] != "192.0.2.1" {
		t.Errorf("answers after reopen: %+v", as)
	}
}

// TestDamagedTail: a torn last line and garbage after good records are skipped with a log
// line, the start succeeds, and new records follow the last good one.
func TestDamagedTail(t *testing.T) {
	for name, tail := range map[string]string{
		"torn":     `1234abcd {"k":"v","t":`,
		"checksum": "00000000 {\"k\":\"v\",\"t\":1,\"c\":\"www\",\"to\":\"unhealthy\"}\n",
		"garbage":  "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.log")
			s, err := Open(Options{Path: path}, t0)
			must(t, err)
			must(t, s.Record([]Change{change("www", t0, StateNone, StateHealthy)}, nil))
			must(t, s.Close())
			good, _ := os.ReadFile(path)
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			_, _ = f.WriteString(tail)
			f.Close()
			var logs bytes.Buffer
			s, err = Open(Options{Path: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, t0.Add(time.Minute))
			must(t, err)
			if !strings.Contains(logs.String(), "damaged") {
				t.Errorf("no log line: %q", logs.String())
			}
			if got := s.State("www"); got != StateHealthy {
				t.Errorf("state: %q", got)
			}
			must(t, s.Record([]Change{change("www", t0.Add(2*time.Minute), StateHealthy, StateUnhealthy)}, nil))
			must(t, s.Close())
			after, _ := os.ReadFile(path)
			if !bytes.HasPrefix(after, good) || bytes.Contains(after, []byte(tail)) {
				t.Errorf("the damaged tail was not cut off:\n%q", after)
			}
			s, err = Open(Options{Path: path}, t0.Add(3*time.Minute))
			must(t, err)
			defer s.Close()
			if got := s.State("www"); got != StateUnhealthy {
				t.Errorf("state after the repaired log: %q", got)
			}
		})
	}
}

// TestBoundedDisk: the two files never hold more than MaxBytes, and the latest changes stay.
func TestBoundedDisk(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "history.log")
	const maxBytes = 64 << 10
	s, err := Open(Options{Path: path, MaxBytes: maxBytes}, t0)
	must(t, err)
	states := []string{StateHealthy, StateUnhealthy}
	for i := range 5000 {
		at := t0.Add(time.Duration(i) * time.Second)
		must(t, s.Record([]Change{change(fmt.Sprintf("c%d", i%50), at, states[(i/50)%2], states[(i/50+1)%2])}, nil))
	}
	must(t, s.Close())
	var total int64
	for _, p := range []string{path, path + ".old"} {
		st, err := os.Stat(p)
		must(t, err)
		total += st.Size()
	}
	if total > maxBytes {
		t.Errorf("the log holds %d bytes, more than %d", total, maxBytes)
	}
	s, err = Open(Options{Path: path, MaxBytes: maxBytes}, t0.Add(time.Hour))
	must(t, err)
	defer s.Close()
	if got, want := s.State("c49"), states[(4999/50+1)%2]; got != want {
		t.Errorf("latest state of c49 after reopen: %q, want %q", got, want)
	}
}

// TestBoundedMemory: a check keeps at most Options.Changes changes.
func TestBoundedMemory(t *testing.T) {
	s, _ := Open(Options{Changes: 4}, t0)
	states := []string{StateHealthy, StateUnhealthy}
	for i := range 100 {
		must(t, s.Record([]Change{change("www", t0.Add(time.Duration(i)*time.Second), states[i%2], states[(i+1)%2])}, nil))
	}
	h, _ := s.Check("www", t0.Add(time.Hour))
	if len(h.Changes) != 4 || !h.Changes[0].At.Equal(t0.Add(99*time.Second)) {
		t.Errorf("kept %d changes, newest %v", len(h.Changes), h.Changes[0].At)
	}
	must(t, s.Record([]Change{change("www", t0.Add(time.Hour), StateHealthy, StateNone)}, nil))
	if _, ok := s.Check("www", t0.Add(time.Hour)); ok {
		t.Error("a removed check is still held")
	}
}

// BenchmarkMemory measures the memory a check costs with a full ring of changes and a week
// of buckets (17 changes: the ring comes round once), and with two changes (no buckets):
// reported as bytes/check.
func BenchmarkMemory(b *testing.B) {
	b.Run("changes=17", func(b *testing.B) { benchMemory(b, 17) })
	b.Run("changes=2", func(b *testing.B) { benchMemory(b, 2) })
}

func benchMemory(b *testing.B, changes int) {
	const checks = 10000
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s, _ := Open(Options{}, t0)
		states := []string{StateHealthy, StateUnhealthy}
		for i := range changes {
			at := t0.Add(time.Duration(i) * time.Hour * 10)
			cs := make([]Change, 0, checks)
			for c := range checks {
				cs = append(cs, change(fmt.Sprintf("check-%05d", c), at, states[i%2], states[(i+1)%2]))
			}
			_ = s.Record(cs, nil)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/checks, "bytes/check")
		runtime.KeepAlive(s)
	}
}

// TestFewChangesHoldNoBuckets: a check whose ring of changes has not come round holds no
// buckets, and its availability is what the same changes give a store whose ring is smaller
// (so that it holds buckets), across a downtime and over a week.
func TestFewChangesHoldNoBuckets(t *testing.T) {
	dir := t.TempDir()
	open := func(name string, ring int, at time.Time) *Store {
		s, err := Open(Options{Path: filepath.Join(dir, name), Changes: ring}, at)
		must(t, err)
		return s
	}
	lazy, eager := open("lazy.log", 16, t0), open("eager.log", 2, t0)
	start := t0.Add(90 * time.Second)
	states := []string{StateNone, StateUnknown, StateHealthy, StateUnhealthy, StateHealthy}
	for m := range 20 {
		at := start.Add(time.Duration(m) * time.Minute)
		if m < len(states)-1 {
			ch := []Change{change("x", at.Add(17*time.Second), states[m], states[m+1])}
			must(t, lazy.Record(ch, nil))
			must(t, eager.Record(ch, nil))
		}
		must(t, lazy.Mark(at.Add(time.Minute)))
		must(t, eager.Mark(at.Add(time.Minute)))
	}
	must(t, lazy.Close())
	must(t, eager.Close())
	back := start.Add(45 * time.Minute) // down for 25 minutes
	lazy, eager = open("lazy.log", 16, back), open("eager.log", 2, back)
	defer lazy.Close()
	defer eager.Close()
	if lazy.checks.get("x").b != nil || eager.checks.get("x").b == nil {
		t.Fatalf("buckets held: ring of 16 %v, ring of 2 %v; want none, some", lazy.checks.get("x").b != nil, eager.checks.get("x").b != nil)
	}
	for _, d := range []time.Duration{50 * time.Minute, time.Hour, 3 * time.Hour, 30 * time.Hour, 8 * 24 * time.Hour} {
		at := start.Add(d)
		l, _ := lazy.Check("x", at)
		e, _ := eager.Check("x", at)
		for i := range l.Availability {
			if l.Availability[i] != e.Availability[i] {
				t.Errorf("after %v, %s: without buckets %+v, with %+v", d, l.Availability[i].Window, l.Availability[i], e.Availability[i])
			}
		}
		// Observed from the first verdict (17s after start) to 20m, then from 45m on; of
		// that, unknown for a minute and unhealthy for another.
		if a := avail(t, l, "24h"); d == 3*time.Hour && (a.Observed != 3*time.Hour-17*time.Second-25*time.Minute || a.Observed-a.Healthy != 2*time.Minute) {
			t.Errorf("24h after 3h with a 25-minute downtime: %+v", a)
		}
	}
}
