package control

import (
	"encoding/json"
	"hash/fnv"
	"reflect"
	"strconv"

	"github.com/vigil-dns/vigil/config"
)

// storedCheck is a check as a State holds it: what usually tells one check from another
// (its id, target and path) inline, and the rest, its shape, shared with every other check
// of the same shape. A fleet of checks written from a few templates then holds a few
// shapes instead of one config.Check (384 bytes) per check; a check whose shape no other
// check has costs what it did, and 56 bytes more.
type storedCheck struct {
	id, host, path string
	port           int
	// shape is the check with ID, Target and Path empty; never changed once stored.
	shape *config.Check
}

// check returns the check sc holds, as a copy of its own.
func (sc storedCheck) check() *config.Check {
	c := *sc.shape
	c.ID, c.Target, c.Path = sc.id, config.Target{Host: sc.host, Port: sc.port}, sc.path
	return &c
}

// shapeRef is one entry of a State's table of shapes: the shape, and how many of the
// state's checks hold it.
type shapeRef struct {
	shape *config.Check
	n     int
}

// shapeKey returns the key of a shape in the table of shapes: a hash of its JSON form; ""
// when it has none (a shape that does not encode is not shared). Two shapes of one key are
// compared whole before one is shared, so that a collision costs sharing, not correctness.
func shapeKey(shape *config.Check) string {
	b, err := json.Marshal(shape)
	if err != nil {
		return ""
	}
	h := fnv.New64a()
	h.Write(b)
	return strconv.FormatUint(h.Sum64(), 36)
}

// store returns c as the state stores it: its shape shared with the checks of the same
// shape (the one the edit stored last, or the table's), the table's count updated.
func (e *edit) store(c *config.Check) storedCheck {
	shape := *c
	shape.ID, shape.Target, shape.Path = "", config.Target{}, ""
	sc := storedCheck{id: c.ID, host: c.Target.Host, port: c.Target.Port, path: c.Path}
	key := ""
	switch {
	case e.lastShape != nil && reflect.DeepEqual(*e.lastShape, shape):
		sc.shape, key = e.lastShape, e.lastKey
	default:
		key = shapeKey(&shape)
		ref, ok := e.s.shapes.Get(key)
		switch {
		case key == "":
			sc.shape = &shape
		case ok && reflect.DeepEqual(*ref.shape, shape):
			sc.shape = ref.shape
		case ok: // another shape of the same key: this one is not shared
			sc.shape, key = &shape, ""
		default:
			sc.shape = &shape
		}
	}
	if key != "" {
		ref, _ := e.s.shapes.Get(key)
		ref.shape, ref.n = sc.shape, ref.n+1
		e.s.shapes = e.s.shapes.Set(e.tok, key, ref)
	}
	e.lastShape, e.lastKey = sc.shape, key
	return sc
}

// release uncounts the shape of a check the state no longer holds (replaced or deleted).
func (e *edit) release(sc storedCheck) {
	key := e.lastKey
	if sc.shape != e.lastShape {
		key = shapeKey(sc.shape)
	}
	ref, ok := e.s.shapes.Get(key)
	if key == "" || !ok || ref.shape != sc.shape {
		return // a shape the table does not count
	}
	if ref.n--; ref.n <= 0 {
		e.s.shapes, _ = e.s.shapes.Delete(e.tok, key)
		if e.lastShape == sc.shape {
			e.lastShape, e.lastKey = nil, ""
		}
		return
	}
	e.s.shapes = e.s.shapes.Set(e.tok, key, ref)
}
