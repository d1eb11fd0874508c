package netlab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
)

// MinRegions and MaxRegions bound a network's regions (a check needs 3 regions by default).
const (
	MinRegions = 3
	MaxRegions = 5
)

// Region is one region of a network: a namespace whose one address every process of the
// region listens on (each on its own ports).
type Region struct {
	// Name is the region's name, e.g. "us-east".
	Name string
	// Index numbers the regions from 1.
	Index int
	// Addr is the region's address, 10.200.<Index>.1, on the namespace's loopback.
	Addr netip.Addr
	// NS is the region's namespace.
	NS *Namespace
}

// RegionAddr is the address of the region numbered index (from 1).
func RegionAddr(index int) netip.Addr { return netip.AddrFrom4([4]byte{10, 200, byte(index), 1}) }

// regionPrefix is the /24 a region's address belongs to; other regions route it over their
// link to that region.
func regionPrefix(index int) netip.Prefix { return netip.PrefixFrom(RegionAddr(index), 24).Masked() }

// Link joins two regions: a TUN device in each namespace and a wire each way between them.
type Link struct {
	// A and B are the regions, A before B in the network's order.
	A, B   *Region
	fa, fb *os.File
	ab, ba *wire
	wg     sync.WaitGroup
}

// linkDevice names the TUN device of region r that leads to region peer ("vl" and the
// peer's index: names are per namespace).
func linkDevice(peer *Region) string { return "vl" + strconv.Itoa(peer.Index) }

// Topology is a network's regions and the links between every pair.
type Topology struct {
	Regions []*Region
	Links   []*Link
}

// Region returns the region named name, or nil.
func (t *Topology) Region(name string) *Region {
	for _, r := range t.Regions {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// link returns the link between regions a and b, or nil.
func (t *Topology) link(a, b string) *Link {
	for _, l := range t.Links {
		if (l.A.Name == a && l.B.Name == b) || (l.A.Name == b && l.B.Name == a) {
			return l
		}
	}
	return nil
}

// regionOf returns the region whose /24 holds addr, or nil.
func (t *Topology) regionOf(addr netip.Addr) *Region {
	for _, r := range t.Regions {
		if regionPrefix(r.Index).Contains(addr) {
			return r
		}
	}
	return nil
}

// buildTopology creates one namespace per region, named prefix + region, with its address,
// and links every pair. On error, what was made is removed.
func buildTopology(ctx context.Context, prefix string, regions []string) (t *Topology, err error) {
	if len(regions) < MinRegions || len(regions) > MaxRegions {
		return nil, fmt.Errorf("netlab: %d regions: want %d to %d", len(regions), MinRegions, MaxRegions)
	}
	t = &Topology{}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.close())
		}
	}()
	for i, name := range regions {
		if slices.Contains(regions[:i], name) {
			return t, fmt.Errorf("netlab: region %s named twice", name)
		}
		ns, err := addNamespace(ctx, prefix+name)
		if err != nil {
			return t, err
		}
		r := &Region{Name: name, Index: i + 1, Addr: RegionAddr(i + 1), NS: ns}
		t.Regions = append(t.Regions, r)
		if err := ipCmd(ctx, "-n", ns.Name, "addr", "add", r.Addr.String()+"/32", "dev", "lo"); err != nil {
			return t, err
		}
	}
	for i, a := range t.Regions {
		for _, b := range t.Regions[i+1:] {
			l, err := newLink(ctx, a, b, uint64(len(t.Links)+1))
			if err != nil {
				return t, err
			}
			t.Links = append(t.Links, l)
		}
	}
	return t, nil
}

// newLink creates the TUN devices of a and b towards each other, routes each region's /24
// over them and starts the wires.
func newLink(ctx context.Context, a, b *Region, seed uint64) (*Link, error) {
	l := &Link{A: a, B: b}
	open := func(r, peer *Region) (*os.File, error) {
		var f *os.File
		err := r.NS.Do(func() error {
			var err error
			f, err = openTUN(linkDevice(peer))
			return err
		})
		if err != nil {
			return nil, err
		}
		dev := linkDevice(peer)
		if err := ipCmd(ctx, "-n", r.NS.Name, "link", "set", dev, "up"); err != nil {
			f.Close()
			return nil, err
		}
		if err := ipCmd(ctx, "-n", r.NS.Name, "route", "add", regionPrefix(peer.Index).String(), "dev", dev, "src", r.Addr.String()); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	var err error
	if l.fa, err = open(a, b); err != nil {
		return nil, err
	}
	if l.fb, err = open(b, a); err != nil {
		l.fa.Close()
		return nil, err
	}
	l.ab, l.ba = newWire(l.fa, l.fb, seed*2), newWire(l.fb, l.fa, seed*2+1)
	for _, w := range []*wire{l.ab, l.ba} {
		l.wg.Go(w.read)
		l.wg.Go(w.deliver)
	}
	return l, nil
}

// SetShape sets the delay of the link, both ways.
func (l *Link) SetShape(s Shape) {
	l.ab.setShape(s)
	l.ba.setShape(s)
}

// Stats returns the counters of both directions: A to B, then B to A.
func (l *Link) Stats() (ab, ba WireStats) { return l.ab.snapshot(), l.ba.snapshot() }

// close ends the wires and closes the TUN devices (which removes them).
func (l *Link) close() {
	close(l.ab.stop)
	close(l.ba.stop)
	l.fa.Close()
	l.fb.Close()
	l.wg.Wait()
}

// close removes the links and the namespaces.
func (t *Topology) close() error {
	for _, l := range t.Links {
		l.close()
	}
	t.Links = nil
	var errs []error
	for _, r := range t.Regions {
		errs = append(errs, r.NS.delete())
	}
	t.Regions = nil
	return errors.Join(errs...)
}
