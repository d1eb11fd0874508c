package gossip

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/vigil-dns/vigil/checker"
)

// decodePage decodes one encoded page, as a node receives it.
func decodePage(t testing.TB, b []byte) *rowPage {
	t.Helper()
	m, err := decode(b)
	if err != nil || m.kind != kindPage {
		t.Fatalf("page does not decode: %v", err)
	}
	return m.page
}

// pagedOwner returns a checker's own row of checks reports and its table.
func pagedOwner(checks int, e Entry) (*ownRow, *Table) {
	o := newOwnRow("c", 1)
	tb := NewTable(4)
	for i := range checks {
		d, _ := o.set(fmt.Sprintf("check-%05d", i), e)
		tb.applyDelta(d, at(0))
	}
	return o, tb
}

// TestPagesLostOrReordered: a location that holds an older version of a row takes the pages
// of a newer one in any order; until it holds every page, its row is the old one, complete,
// with no cell withdrawn; the page that completes the set applies the row at once. A page
// lost leaves the row as it was until the assembly is dropped and a complete set arrives.
func TestPagesLostOrReordered(t *testing.T) {
	o, owner := pagedOwner(3000, Entry{Status: checker.StatusHealthy})
	loc := NewTable(4)
	loc.applyRow(owner.fullRow("c"), at(0), true)
	before := rowCells(loc, "c")
	// The checker withdraws a third of its checks and changes another third.
	for i := range 3000 {
		var d delta
		switch i % 3 {
		case 0:
			d, _ = o.withdraw(fmt.Sprintf("check-%05d", i))
		case 1:
			d, _ = o.set(fmt.Sprintf("check-%05d", i), Entry{Status: checker.StatusUnhealthy})
		default:
			continue
		}
		owner.applyDelta(d, at(1))
	}
	loc.applyHeartbeat(o.heartbeat(), at(2))
	pages := owner.rowPages("c", 1, 8<<10)
	if len(pages) < 5 {
		t.Fatalf("%d pages: want several", len(pages))
	}
	for _, p := range pages {
		if len(p) > 8<<10 {
			t.Fatalf("page of %d bytes over the limit", len(p))
		}
	}
	unchanged := func(what string) {
		t.Helper()
		if got := rowCells(loc, "c"); !maps.Equal(got, before) {
			t.Fatalf("%s: the row changed before its pages were complete (%d cells, was %d)", what, len(got), len(before))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	order := rng.Perm(len(pages))
	lost := order[len(order)/2]
	for i, k := range order {
		if k == lost {
			continue
		}
		loc.applyPage(decodePage(t, pages[k]), at(3+i/100))
		if i%2 == 0 { // a duplicate
			loc.applyPage(decodePage(t, pages[k]), at(3+i/100))
		}
		unchanged(fmt.Sprintf("after %d pages of %d", i+1, len(pages)))
	}
	if !loc.assembling("c", at(4)) {
		t.Fatal("not assembling after all but one page")
	}
	// The lost page never comes: the assembly is dropped, the row stays as it was.
	loc.expirePages(at(4).Add(pageIdle))
	if loc.assembling("c", at(4).Add(pageIdle)) || len(loc.pending) != 0 || loc.pendingEntries != 0 {
		t.Fatalf("assembly kept after %v without a page", pageIdle)
	}
	loc.applyPage(decodePage(t, pages[lost]), at(20))
	unchanged("the lost page alone, late")
	// A complete set, reordered, applies the row.
	now := at(30)
	for i, k := range rng.Perm(len(pages)) {
		loc.applyPage(decodePage(t, pages[k]), now)
		if i < len(pages)-1 {
			unchanged("second set")
		}
	}
	if got, want := rowCells(loc, "c"), ownCells(o); !maps.Equal(got, want) {
		t.Fatalf("after every page: %d cells, the checker holds %d", len(got), len(want))
	}
	if r := loc.rows["c"]; !r.complete() || r.seq != o.seq || len(loc.pending) != 0 {
		t.Errorf("row at seq %d (want %d), complete %v, %d assemblies left", r.seq, o.seq, r.complete(), len(loc.pending))
	}
	if !progress(loc).Equal(at(2)) {
		t.Errorf("progress at %v, want the heartbeat's 2s: pages are a kept copy", progress(loc).Sub(t0))
	}
}

// TestPagesNewerVersionWins: pages of a newer version of the row replace an assembly of an
// older one, whose late pages are then ignored; pages of a version the table holds are old;
// two pages that both say they are the last end the assembly.
func TestPagesNewerVersionWins(t *testing.T) {
	o, owner := pagedOwner(500, Entry{Status: checker.StatusHealthy})
	old := owner.rowPages("c", 1, 2<<10)
	d, _ := o.set("check-00007", Entry{Status: checker.StatusUnhealthy})
	owner.applyDelta(d, at(1))
	cur := owner.rowPages("c", 2, 2<<10)
	loc := NewTable(4)
	loc.applyPage(decodePage(t, old[0]), at(2))
	loc.applyPage(decodePage(t, cur[1]), at(2))
	if a := loc.pending["c"]; a == nil || a.seq != o.seq {
		t.Fatalf("assembly %+v, want one of seq %d", a, o.seq)
	}
	for _, p := range old {
		if loc.applyPage(decodePage(t, p), at(3)) != outcomeOld {
			t.Fatal("a page of an older version was taken")
		}
	}
	if loc.rows["c"] != nil {
		t.Fatal("a row appeared from an incomplete set")
	}
	for _, p := range cur {
		loc.applyPage(decodePage(t, p), at(4))
	}
	if got, want := rowCells(loc, "c"), ownCells(o); !maps.Equal(got, want) {
		t.Fatalf("%d cells, want %d", len(got), len(want))
	}
	if loc.applyPage(decodePage(t, cur[0]), at(5)) != outcomeOld || len(loc.pending) != 0 {
		t.Error("a page of the version held started an assembly")
	}
	// Two last pages of one version: not one set.
	d, _ = o.set("check-00008", Entry{Status: checker.StatusUnhealthy})
	owner.applyDelta(d, at(6))
	next := owner.rowPages("c", 3, 2<<10)
	p := decodePage(t, next[0])
	p.last = true
	loc.applyPage(p, at(7))
	loc.applyPage(decodePage(t, next[len(next)-1]), at(7))
	if len(loc.pending) != 0 {
		t.Error("an assembly with two last pages was kept")
	}
}

// TestPagesBounded: at most maxAssemblies rows are assembled at once.
func TestPagesBounded(t *testing.T) {
	loc := NewTable(100)
	for i := range maxAssemblies + 2 {
		h := header{checker: fmt.Sprintf("c%d", i), gen: 1, seq: 5}
		o := loc.applyPage(&rowPage{header: h, entries: []rowEntry{{check: "a", seq: 1}}}, at(0))
		if i >= maxAssemblies && o != outcomeFull {
			t.Errorf("assembly %d taken", i+1)
		}
	}
	if len(loc.pending) != maxAssemblies || loc.pendingEntries != maxAssemblies {
		t.Errorf("%d assemblies of %d entries", len(loc.pending), loc.pendingEntries)
	}
}

// repairPaged asks src for checker's row as Node.answer does, in version 2 with pages of at
// most limit bytes, and delivers the answer to dst through the wire; the pages in a random
// order, one of them lost at times, some twice, and some of another answer's pages among
// them at times. It returns what src answered: "since", "full", "pages", "pages, one lost"
// (either with ", another answer's among them") or "" for nothing.
func repairPaged(dst, src *Table, checker string, now time.Time, limit int, rng *rand.Rand) string {
	gen, seq, _ := dst.holds(checker)
	fr, sr, pages := src.answerOne(ask{checker: checker, gen: gen, seq: seq}, wireV2, limit, rng.Uint64())
	if pages == nil {
		if fr == nil && sr == nil {
			return ""
		}
		m, err := decode(encodeRows(wireV2, nonNil(fr), nonNilSince(sr)))
		if err != nil {
			panic(err)
		}
		if sr != nil {
			dst.applySince(m.since[0], now)
			return "since"
		}
		dst.applyRow(m.rows[0], now, false)
		return "full"
	}
	what := "pages"
	lost := -1
	if rng.IntN(4) == 0 {
		lost, what = rng.IntN(len(pages)), "pages, one lost"
	}
	// At times a second answer of the same version is in flight, its pages in another
	// order of cells: some of them arrive among the first answer's.
	var all [][]byte
	for _, k := range rng.Perm(len(pages)) {
		if k != lost {
			all = append(all, pages[k])
		}
	}
	if rng.IntN(3) == 0 {
		what += ", another answer's among them"
		for _, p := range src.rowPages(checker, rng.Uint64(), limit) {
			if rng.IntN(2) == 0 {
				i := rng.IntN(len(all) + 1)
				all = append(all[:i], append([][]byte{p}, all[i:]...)...)
			}
		}
	}
	for _, b := range all {
		m, err := decode(b)
		if err != nil {
			panic(err)
		}
		dst.applyPage(m.page, now)
		if rng.IntN(5) == 0 {
			dst.applyPage(m.page, now)
		}
	}
	return what
}

// TestPagesRandom is TestSinceRandom with whole rows in pages of one to a few entries, sent
// in random orders, some lost, some twice: whenever a table holds the row complete, it holds
// exactly what the checker held at that sequence.
func TestPagesRandom(t *testing.T) {
	var rng *rand.Rand
	counts := sinceRandom(t, 80, func(dst, src *Table, now time.Time, r *rand.Rand) string {
		rng = r
		return repairPaged(dst, src, "c", now, []int{0, 900, 1500}[rng.IntN(3)], rng)
	})
	t.Logf("answers: %v", counts)
	if counts["pages"] == 0 || counts["pages, one lost"] == 0 || counts["pages, another answer's among them"] == 0 || counts["since"] == 0 {
		t.Errorf("answers %v: want pages, pages with one lost, and changes only", counts)
	}
}

// BenchmarkRowPages measures encoding a whole row of 1,000,000 cells in pages, as a node does
// under its lock to answer a late location.
func BenchmarkRowPages(b *testing.B) {
	tb := NewTable(4)
	o := newOwnRow("c", 1)
	for i := range 1000000 {
		d, _ := o.set(fmt.Sprintf("check-%07d", i), measuredEntry(i))
		tb.applyDelta(d, at(0))
	}
	var pages [][]byte
	for b.Loop() {
		pages = tb.rowPages("c", 1, pageSize)
	}
	n := 0
	for _, p := range pages {
		n += len(p)
	}
	b.ReportMetric(float64(len(pages)), "pages")
	b.ReportMetric(float64(n), "bytes")
}

// TestOnePagedAnswerAtATime bounds a node's transfers in flight: while one row's pages are
// being sent, an ask that needs another row paged (from any peer) gets nothing and asks
// again; the pages are encoded one at a time as they are sent, each within a page, and
// assemble into the row. (At 1,000,000 checks a location answering several checkers' repairs
// at once held 0.6 to 1.6 GB of rows copied and paged.)
func TestOnePagedAnswerAtATime(t *testing.T) {
	n, err := New(Config{ID: "loc", Region: "r", Roles: RoleLocation, BindAddr: "127.0.0.1",
		Keys: [][]byte{testKey}, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	const cells = 20_000 // several pages of pageSize
	now := time.Unix(1, 0)
	n.mu.Lock()
	for _, c := range []string{"a", "b"} {
		h := header{checker: c, gen: 1}
		for i := range cells {
			h.seq, h.beat = uint64(i+1), uint64(i+1)
			n.table.applyDelta(delta{header: h, op: opSet, check: fmt.Sprintf("check-%06d", i),
				entry: Entry{Status: checker.StatusHealthy, Reason: strings.Repeat("r", MaxReasonLen)}}, now)
		}
	}
	n.mu.Unlock()

	first, done := n.answer("p1", []ask{{checker: "a"}}, wireV2)
	if first == nil {
		t.Fatal("no answer to the first ask")
	}
	if msgs, _ := n.answer("p2", []ask{{checker: "b"}}, wireV2); msgs != nil {
		t.Fatal("a second row paged while the first's pages are in flight")
	}
	dst := NewTable(4)
	pages := 0
	for m := range first {
		if len(m) > pageSize {
			t.Fatalf("page %d of %d bytes, over %d", pages, len(m), pageSize)
		}
		dst.applyPage(decodePage(t, m), now)
		pages++
	}
	if got, _ := dst.Len(); pages < 2 || got != cells {
		t.Fatalf("%d pages assembled into %d cells, want %d in at least 2 pages", pages, got, cells)
	}
	done()
	if msgs, _ := n.answer("p2", []ask{{checker: "b"}}, wireV2); msgs == nil {
		t.Fatal("no row paged once the first's pages were sent")
	}
}

// BenchmarkCopyRow measures what a node does under its lock to page a whole row of
// 1,000,000 cells: copy it out of the table (then encoded after the lock).
func BenchmarkCopyRow(b *testing.B) {
	tb := NewTable(4)
	o := newOwnRow("c", 1)
	for i := range 1000000 {
		d, _ := o.set(fmt.Sprintf("check-%07d", i), measuredEntry(i))
		tb.applyDelta(d, at(0))
	}
	b.ReportAllocs()
	for b.Loop() {
		if tb.copyRow("c", 1) == nil {
			b.Fatal("no row")
		}
	}
}

// An assembly holds its pages encoded, and a complete row decodes to the entries paged, with
// the check ids and reasons the table holds already as the table's own strings.
func TestPackedPagesDecodeToTheTablesStrings(t *testing.T) {
	held := NewTable(4)
	held.applyRow(&fullRow{header: header{checker: "a", gen: 1, seq: 2}, entries: []rowEntry{
		{check: "web", seq: 1, entry: Entry{Status: checker.StatusUnhealthy, Reason: "http 503"}},
	}}, at(0), true)
	entries := []rowEntry{
		{check: strings.Clone("web"), seq: 3, entry: Entry{Status: checker.StatusUnhealthy, Consecutive: 4, Latency: 1500 * time.Microsecond, Reason: strings.Clone("http 503")}},
		{check: "api", seq: 7, entry: Entry{Status: checker.StatusHealthy, Consecutive: 1}},
	}
	p := pack(entries)
	if want := len(encodePage(&rowPage{entries: entries})) - len(encodePage(&rowPage{})); len(p.b) != want {
		t.Fatalf("packed %d bytes, want the %d of the entries encoded", len(p.b), want)
	}
	got, ok := held.unpack(p, nil)
	if !ok || len(got) != len(entries) {
		t.Fatalf("unpacked %d entries (ok %v), want %d", len(got), ok, len(entries))
	}
	for k := range entries {
		if got[k] != entries[k] {
			t.Fatalf("entry %d: %+v, want %+v", k, got[k], entries[k])
		}
	}
	i, _ := held.checks.lookup("web")
	r, _ := held.reasons.lookup("http 503")
	if unsafe.StringData(got[0].check) != unsafe.StringData(held.checks.names[i]) ||
		unsafe.StringData(got[0].entry.Reason) != unsafe.StringData(held.reasons.names[r]) {
		t.Fatal("a check id or reason the table holds was decoded as a new string")
	}
	if _, ok := held.unpack(packedPage{n: 3, b: p.b}, nil); ok {
		t.Fatal("a packed page claiming more entries than it holds decoded")
	}
}
