package control

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// TestCheckShapesShared: checks that differ in id, target and path only hold one shape, read
// back as written; a check of another shape holds its own; the table counts the checks of
// each shape, through replacements and deletions, and forgets a shape no check holds.
func TestCheckShapesShared(t *testing.T) {
	doc := config.Scale{Checks: 50, Protocol: config.ProtocolHTTP}.Document()
	doc.Checks[7].Target.Host, doc.Checks[8].Path = "192.0.2.8", "/other"
	doc.Checks[9].Headers = map[string]string{"x-a": "b"}
	s := NewState(doc)
	for i := range doc.Checks {
		got, ok := s.Check(doc.Checks[i].ID)
		if !ok || !reflect.DeepEqual(got, doc.Checks[i]) {
			t.Fatalf("check %s: got %+v, want %+v", doc.Checks[i].ID, got, doc.Checks[i])
		}
	}
	if got := shapeCounts(s); !reflect.DeepEqual(got, []int{1, 49}) {
		t.Fatalf("shapes counted %v, want [1 49]", got)
	}
	a, _ := s.checks.Get(doc.Checks[0].ID)
	b, _ := s.checks.Get(doc.Checks[49].ID)
	if a.shape != b.shape {
		t.Fatal("two checks of one shape hold two shapes")
	}

	// One write at a time, each in its own edit: the table still shares.
	e := s.edit(1)
	c := doc.Checks[3]
	c.ID = "new-1"
	e.putCheck(&c)
	s = e.s
	e = s.edit(2)
	c.Interval = config.Duration(7e9)
	c.ID = doc.Checks[4].ID // replaced by another shape
	e.putCheck(&c)
	e.deleteCheck(doc.Checks[9].ID)
	s = e.s
	if got := shapeCounts(s); !reflect.DeepEqual(got, []int{1, 49}) {
		t.Fatalf("after the writes, shapes counted %v, want [1 49]", got)
	}
	n, _ := s.checks.Get("new-1")
	if n.shape != a.shape {
		t.Fatal("a check written alone does not share its shape with the state's")
	}
	e = s.edit(3)
	for id := range s.checks.All("") {
		e.deleteCheck(id)
	}
	if e.s.shapes.Len() != 0 {
		t.Fatalf("no check left, %d shapes", e.s.shapes.Len())
	}
}

// shapeCounts returns the counts of a state's table of shapes, sorted.
func shapeCounts(s *State) []int {
	var out []int
	total := 0
	for _, r := range s.shapes.All("") {
		out = append(out, r.n)
		total += r.n
	}
	if total != s.checks.Len() {
		panic(fmt.Sprintf("shapes count %d checks of %d", total, s.checks.Len()))
	}
	slices.Sort(out)
	return out
}
