package state

import (
	"encoding/json"
	"hash/fnv"
	"maps"
	"slices"
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
	c := new(config.Check)
	sc.into(c)
	return c
}

// into makes c the check sc holds.
func (sc storedCheck) into(c *config.Check) {
	*c = *sc.shape
	c.ID, c.Target, c.Path = sc.id, config.Target{Host: sc.host, Port: sc.port}, sc.path
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
func (e *Edit) store(c *config.Check) storedCheck {
	shape := *c
	shape.ID, shape.Target, shape.Path = "", config.Target{}, ""
	sc := storedCheck{id: c.ID, host: c.Target.Host, port: c.Target.Port, path: c.Path}
	key := ""
	switch {
	case e.lastShape != nil && sameShape(e.lastShape, &shape):
		sc.shape, key = e.lastShape, e.lastKey
	default:
		key = shapeKey(&shape)
		ref, ok := e.Next.shapes.Get(key)
		switch {
		case key == "":
			sc.shape = &shape
		case ok && sameShape(ref.shape, &shape):
			sc.shape = ref.shape
		case ok: // another shape of the same key: this one is not shared
			sc.shape, key = &shape, ""
		default:
			sc.shape = &shape
		}
	}
	if key != "" {
		ref, _ := e.Next.shapes.Get(key)
		ref.shape, ref.n = sc.shape, ref.n+1
		e.Next.shapes = e.Next.shapes.Set(e.tok, key, ref)
	}
	e.lastShape, e.lastKey = sc.shape, key
	return sc
}

// release uncounts the shape of a check the state no longer holds (replaced or deleted).
func (e *Edit) release(sc storedCheck) {
	key := e.lastKey
	if sc.shape != e.lastShape {
		key = shapeKey(sc.shape)
	}
	ref, ok := e.Next.shapes.Get(key)
	if key == "" || !ok || ref.shape != sc.shape {
		return // a shape the table does not count
	}
	if ref.n--; ref.n <= 0 {
		e.Next.shapes, _ = e.Next.shapes.Delete(e.tok, key)
		if e.lastShape == sc.shape {
			e.lastShape, e.lastKey = nil, ""
		}
		return
	}
	e.Next.shapes = e.Next.shapes.Set(e.tok, key, ref)
}

// sameShape reports whether a and b are the same check, as reflect.DeepEqual would say
// (nil and empty slices and maps told apart), at a fraction of its cost: every field of
// config.Check is compared (TestSameShapeComparesEveryField fails when one is added and
// not compared here).
func sameShape(a, b *config.Check) bool {
	return a.ID == b.ID && a.Protocol == b.Protocol && a.Target == b.Target && a.IPVersion == b.IPVersion &&
		a.Path == b.Path && a.Method == b.Method && a.HostHeader == b.HostHeader && a.SNI == b.SNI &&
		sameMap(a.Headers, b.Headers) && sameSlice(a.ExpectStatus, b.ExpectStatus) &&
		a.BodyMatch == b.BodyMatch && a.TLSVerify == b.TLSVerify && a.FollowRedirects == b.FollowRedirects &&
		a.KeepAlive == b.KeepAlive && a.HTTP2 == b.HTTP2 && a.TLSCA == b.TLSCA && samePtr(a.GRPC, b.GRPC) && samePtr(a.DNS, b.DNS) &&
		a.Interval == b.Interval && a.Timeout == b.Timeout &&
		a.FailureThreshold == b.FailureThreshold && a.SuccessThreshold == b.SuccessThreshold &&
		sameSlice(a.Regions, b.Regions) && a.AllowFewerRegions == b.AllowFewerRegions &&
		a.CheckersPerRegion == b.CheckersPerRegion && a.HealthyThreshold == b.HealthyThreshold &&
		a.MinReporters == b.MinReporters && a.Inverted == b.Inverted && a.Disabled == b.Disabled &&
		sameSlice(a.Children, b.Children) && a.MinHealthy == b.MinHealthy
}

// sameSlice reports whether a and b are equal, nil and empty told apart.
func sameSlice[T comparable](a, b []T) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }

// sameMap reports whether a and b are equal, nil and empty told apart.
func sameMap[K, V comparable](a, b map[K]V) bool {
	return (a == nil) == (b == nil) && maps.Equal(a, b)
}

// samePtr reports whether a and b are both nil or point to equal values.
func samePtr[T comparable](a, b *T) bool { return a == b || a != nil && b != nil && *a == *b }
