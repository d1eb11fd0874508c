package gossip

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
)

// mirror is what a reader of the feed holds: every report and every row's progress.
type mirror struct {
	cells    map[[2]string]Entry
	progress map[string]time.Time
}

func (m *mirror) apply(c *Changes) {
	for _, cc := range c.Cells {
		k := [2]string{cc.Checker, cc.Check}
		if cc.Present {
			m.cells[k] = cc.Entry
		} else {
			delete(m.cells, k)
		}
	}
	for _, rc := range c.Rows {
		if rc.Gone {
			delete(m.progress, rc.Checker)
		} else {
			m.progress[rc.Checker] = rc.Progress
		}
	}
}

// TestFeedMirrorsTable drives a table with random deltas, whole rows, restarts and forgetting,
// drains its feed in small batches between steps, and checks that a reader that applies only
// the feed holds exactly what the table holds; at the end, with every row gone, the table's
// interned strings are all released.
func TestFeedMirrorsTable(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tb := NewTable(100)
		m := &mirror{cells: map[[2]string]Entry{}, progress: map[string]time.Time{}}
		// A few steps before the feed is on: turning it on must mark them.
		step := func(i int) {
			now := at(i)
			id := fmt.Sprintf("c%d", rng.IntN(4))
			gen := uint64(1 + rng.IntN(2))
			seq := uint64(1 + rng.IntN(30))
			h := header{checker: id, gen: gen, seq: seq, beat: uint64(i)}
			check := fmt.Sprintf("k%d", rng.IntN(12))
			e := Entry{Status: checker.Status(1 + rng.IntN(2)), Reason: fmt.Sprintf("r%d", rng.IntN(3)), Latency: time.Duration(rng.IntN(5)) * time.Millisecond}
			switch rng.IntN(10) {
			case 0, 1, 2, 3:
				tb.applyDelta(delta{header: h, op: opSet, check: check, entry: e}, now)
			case 4:
				tb.applyDelta(delta{header: h, op: opWithdraw, check: check}, now)
			case 5:
				tb.applyDelta(delta{header: h, op: opWithdrawAll}, now)
			case 6:
				tb.applyHeartbeat(h, now)
			case 7, 8:
				f := &fullRow{header: h}
				for k := range 12 {
					if rng.IntN(2) == 0 {
						f.entries = append(f.entries, rowEntry{check: fmt.Sprintf("k%d", k), seq: uint64(1 + rng.IntN(int(seq))), entry: e})
					}
				}
				tb.applyRow(f, now, i%2 == 0)
			case 9:
				tb.forget(now.Add(-time.Duration(rng.IntN(20))*time.Second), func(string) bool { return rng.IntN(2) == 0 })
			}
		}
		for i := range 20 {
			step(i)
		}
		tb.enableFeed()
		var out Changes
		for i := 20; i < 600; i++ {
			step(i)
			if rng.IntN(3) == 0 {
				for tb.drain(1+rng.IntN(5), &out) {
					m.apply(&out)
				}
				m.apply(&out)
				checkMirror(t, seed, i, tb, m)
			}
		}
		tb.forget(at(10000), func(string) bool { return false })
		for tb.drain(3, &out) {
			m.apply(&out)
		}
		m.apply(&out)
		checkMirror(t, seed, -1, tb, m)
		if n, r := tb.checks.len(), tb.reasons.len(); n != 0 || r != 0 || tb.reports != 0 {
			t.Fatalf("seed %d: empty table still holds %d check ids, %d reasons, %d reports", seed, n, r, tb.reports)
		}
	}
}

func checkMirror(t *testing.T, seed uint64, step int, tb *Table, m *mirror) {
	t.Helper()
	held := heldEntries(tb)
	if len(held) != len(m.cells) || tb.reports != len(held) {
		t.Fatalf("seed %d step %d: table holds %d reports (counted %d), the feed's reader %d", seed, step, len(held), tb.reports, len(m.cells))
	}
	for k, he := range held {
		if e, ok := m.cells[k]; !ok || e != he {
			t.Fatalf("seed %d step %d: %s/%s: table %+v, reader %+v (%v)", seed, step, k[0], k[1], he, e, ok)
		}
	}
	if len(m.progress) != len(tb.rows) {
		t.Fatalf("seed %d step %d: table holds %d rows, reader %d", seed, step, len(tb.rows), len(m.progress))
	}
	for id, r := range tb.rows {
		if p, ok := m.progress[id]; !ok || !p.Equal(r.progress) {
			t.Fatalf("seed %d step %d: row %s progress %v, reader %v (%v)", seed, step, id, r.progress, p, ok)
		}
	}
}

// TestFeedCoalesces: many changes of one cell between two drains are one mark, and a drain
// with nothing marked hands out nothing.
func TestFeedCoalesces(t *testing.T) {
	tb := NewTable(10)
	sig := tb.enableFeed()
	for i := range 100 {
		tb.applyDelta(set(1, uint64(i+1), uint64(i+1), "web", checker.Status(1+i%2)), at(i))
	}
	select {
	case <-sig:
	default:
		t.Fatal("no signal after changes")
	}
	var out Changes
	if more := tb.drain(10, &out); more || len(out.Cells) != 1 || len(out.Rows) != 1 {
		t.Fatalf("drain: %d cells, %d rows, more %v; want 1, 1, false", len(out.Cells), len(out.Rows), more)
	}
	if c := out.Cells[0]; !c.Present || c.Entry.Status != checker.StatusUnhealthy || c.Seq != 100 {
		t.Fatalf("drained %+v, want the last change (unhealthy at seq 100)", c)
	}
	if tb.drain(10, &out); len(out.Cells)+len(out.Rows) != 0 {
		t.Fatalf("second drain: %+v, want nothing", out)
	}
	select {
	case <-sig:
		t.Fatal("signal without a change since the drain")
	default:
	}
}

// TestTableBytesPerReport measures what the table holds per report: 100,000 checks reported
// by 6 checkers, every reason one of a few. It fails when a report costs more than 96 bytes
// (a map slot and its share of the interned check id); it logs the figure.
func TestTableBytesPerReport(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 600,000 reports")
	}
	const checks, checkers = 100_000, 6
	ids := make([]string, checks)
	for i := range ids {
		ids[i] = fmt.Sprintf("check-%07d", i)
	}
	before := heapInUse()
	tb := NewTable(100)
	for c := range checkers {
		f := &fullRow{header: header{checker: fmt.Sprintf("checker-%d", c), gen: 1, seq: checks, beat: 1}}
		f.entries = make([]rowEntry, checks)
		for i, id := range ids {
			// As decoded from the wire: every entry's strings are its own.
			f.entries[i] = rowEntry{check: strings.Clone(id), seq: uint64(i + 1), entry: Entry{Status: checker.StatusHealthy,
				Consecutive: 3, Latency: 2 * time.Millisecond, Reason: strings.Clone("HTTP 200")}}
		}
		tb.applyRow(f, at(1), true)
	}
	after := heapInUse()
	runtime.KeepAlive(ids)
	per := float64(after-before) / float64(checks*checkers)
	t.Logf("table: %.1f bytes per report (%d reports, %d checks, heap %d bytes)", per, checks*checkers, checks, after-before)
	if per > 96 {
		t.Errorf("table holds %.1f bytes per report, want at most 96", per)
	}
	runtime.KeepAlive(tb)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A row's marks move from a set to a bitmap once many, and every mark comes out of a drain
// once, whichever holds it, including one made below where a partial drain stopped.
func TestRowMarksBitmap(t *testing.T) {
	const numbers = 3 * marksToBitmap
	var m rowMarks
	for i := range uint32(numbers) {
		if !m.mark(i, numbers) {
			t.Fatalf("number %d marked twice", i)
		}
	}
	if m.bits == nil || m.cells != nil {
		t.Fatalf("%d marks of %d numbers still in a set", numbers, numbers)
	}
	if m.mark(7, numbers) {
		t.Fatal("a number marked again in the bitmap")
	}
	seen := map[uint32]int{}
	take := func(n int) bool {
		return m.take(func(i uint32) bool {
			if n == 0 {
				return false
			}
			n--
			seen[i]++
			return true
		})
	}
	if !take(numbers / 2) {
		t.Fatal("a partial drain did not stop")
	}
	delete(seen, 3)
	if !m.mark(3, numbers) || !m.mark(numbers+100, numbers) {
		t.Fatal("a drained or new number was not marked again")
	}
	if take(numbers) {
		t.Fatal("the rest did not drain")
	}
	for i := range uint32(numbers) {
		if seen[i] != 1 {
			t.Fatalf("number %d came out %d times", i, seen[i])
		}
	}
	if seen[numbers+100] != 1 || len(seen) != numbers+1 {
		t.Fatalf("%d numbers came out, want %d", len(seen), numbers+1)
	}
}
