package state

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
	e := s.Edit(1)
	c := doc.Checks[3]
	c.ID = "new-1"
	e.PutCheck(&c)
	s = e.Next
	e = s.Edit(2)
	c.Interval = config.Duration(7e9)
	c.ID = doc.Checks[4].ID // replaced by another shape
	e.PutCheck(&c)
	e.deleteCheck(doc.Checks[9].ID)
	s = e.Next
	if got := shapeCounts(s); !reflect.DeepEqual(got, []int{1, 49}) {
		t.Fatalf("after the writes, shapes counted %v, want [1 49]", got)
	}
	n, _ := s.checks.Get("new-1")
	if n.shape != a.shape {
		t.Fatal("a check written alone does not share its shape with the state's")
	}
	e = s.Edit(3)
	for id := range s.checks.All("") {
		e.deleteCheck(id)
	}
	if e.Next.shapes.Len() != 0 {
		t.Fatalf("no check left, %d shapes", e.Next.shapes.Len())
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

// TestSameShapeComparesEveryField changes each field of a check in turn (and, for a slice
// or map, makes it empty instead of nil) and expects sameShape to tell the two apart, as
// reflect.DeepEqual does; a field added to config.Check and not compared fails it.
func TestSameShapeComparesEveryField(t *testing.T) {
	base := config.DefaultCheck()
	base.Regions = nil
	typ := reflect.TypeFor[config.Check]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		variants := map[string]func(v reflect.Value){"set": func(v reflect.Value) { setNonZero(t, v) }}
		if k := f.Type.Kind(); k == reflect.Slice || k == reflect.Map {
			variants["empty"] = func(v reflect.Value) {
				if k == reflect.Slice {
					v.Set(reflect.MakeSlice(f.Type, 0, 0))
				} else {
					v.Set(reflect.MakeMap(f.Type))
				}
			}
		}
		for name, change := range variants {
			a, b := base, base
			change(reflect.ValueOf(&b).Elem().Field(i))
			if reflect.DeepEqual(a, b) {
				t.Fatalf("%s %s: the change left the check equal", f.Name, name)
			}
			if sameShape(&a, &b) || sameShape(&b, &a) {
				t.Errorf("%s %s: sameShape does not tell the checks apart", f.Name, name)
			}
			if c := b; !sameShape(&b, &c) {
				t.Errorf("%s %s: sameShape tells a check from its copy", f.Name, name)
			}
		}
	}
}

// setNonZero gives v a value that differs from the one it has.
func setNonZero(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Float64:
		v.SetFloat(v.Float() + 0.5)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		setNonZero(t, s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		setNonZero(t, k)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if !v.IsNil() {
			p.Elem().Set(v.Elem())
			setNonZero(t, p.Elem().Field(0))
		}
		v.Set(p)
	case reflect.Struct:
		setNonZero(t, v.Field(0))
	default:
		t.Fatalf("no value for a field of kind %s", v.Kind())
	}
}
