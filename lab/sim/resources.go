package sim

// Per-node resources of the nodes network, measured in one process: goroutines by the pprof
// labels every node's goroutines carry, sockets by their local address, the heap after GC.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/lab/cluster"
)

const (
	// heapSamples and heapSampleGap: a measure takes up to heapSamples samples, heapSampleGap
	// apart, until one is quiet: a collection during which less than heapQuiet of the heap
	// it left was allocated.
	heapSamples, heapSampleGap, heapQuiet = 8, 200 * time.Millisecond, 1.0 / 16
)

// HeapSample is one look at the live heap: a garbage collection and what it left. A
// collection counts as live everything allocated while it runs (it marks new objects at
// once), and the nodes never stop allocating: every gossip message memberlist compresses takes
// a 72 KiB LZW writer for a moment, tens of MiB a second while the fleet changes. On a busy
// machine the collection's wall time stretches, and that garbage with it: one collection of
// 303ms after a growth left 31.1 MiB, 24.3 MiB of it allocated while it ran; the next, 200ms
// later, left 10.9 MiB with 0.1 MiB allocated. What was live before the collection began lies
// between what it left less what was allocated meanwhile (Kept) and what it left (After); a
// quiet sample pins it.
type HeapSample struct {
	// After is the live heap after the collection, as the runtime counts it (HeapAlloc).
	After uint64
	// During is what was allocated from the collection's start until After was read.
	During uint64
	// Took is the collection's wall time.
	Took time.Duration
}

// Kept is the heap that was live before the collection began and still was at its end, at
// least: After less During. It errs low by the garbage allocated between the collection's
// start and its first marks.
func (s HeapSample) Kept() uint64 {
	if s.During >= s.After {
		return 0
	}
	return s.After - s.During
}

// quiet reports whether little was allocated during the collection.
func (s HeapSample) quiet() bool { return float64(s.During) <= heapQuiet*float64(s.After) }

// sampleHeap collects garbage twice: once to end any collection in progress, so that the
// second starts at once, and the second measured.
func sampleHeap() HeapSample {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return HeapSample{After: after.HeapAlloc, During: after.TotalAlloc - before.TotalAlloc, Took: time.Since(start)}
}

// quietHeap samples the heap until a sample is quiet, heapSamples at most, and returns the
// sample during which least was allocated: the narrowest bounds of what was live.
func quietHeap() HeapSample {
	best := sampleHeap()
	for i := 1; i < heapSamples && !best.quiet(); i++ {
		time.Sleep(heapSampleGap)
		if s := sampleHeap(); s.During < best.During {
			best = s
		}
	}
	return best
}

// Usage is what one node held at one instant.
type Usage struct {
	// Node and Role name the node.
	Node, Role string
	// Goroutines counts the goroutines that carry the node's labels: every goroutine its
	// roles and its memberlist started, not those of timer callbacks (time.AfterFunc).
	Goroutines int
	// Sockets counts the open sockets of the node: a location's DNS sockets (bound to its DNS
	// address), a checker's probe connections (bound to its own source address).
	Sockets int
}

// Resources is one measurement of every node's resources, in one process.
type Resources struct {
	// Label says when the measurement was made.
	Label string
	// Nodes are the data-plane nodes' usages, sorted by node.
	Nodes []Usage
	// Unlabeled counts the goroutines of no node: the simulation's own (queries, sampler,
	// targets) and timer callbacks.
	Unlabeled int
	// OtherSockets counts the process's sockets of no node: targets, queries, the voter.
	OtherSockets int
	// Heap is the heap kept (HeapSample.Kept), less the heap before the first node started.
	// It holds the history recorded so far too (bounded: maxAnswersPerLocation answers a
	// location).
	Heap uint64
	// HeapHigh is the heap the collection left (HeapSample.After), less the same: Heap plus
	// what was allocated during the collection, the most the nodes held.
	HeapHigh uint64
	// HeapSample is the sample Heap and HeapHigh come from (quietHeap).
	HeapSample HeapSample
}

// RoleUsage sums up one role's usage.
type RoleUsage struct {
	// Nodes counts the role's nodes.
	Nodes int
	// MeanGoroutines and MeanSockets are the means per node.
	MeanGoroutines, MeanSockets float64
	// MinGoroutines and MaxGoroutines are the fewest and most goroutines of one node.
	MinGoroutines, MaxGoroutines int
	// MinSockets and MaxSockets are the fewest and most sockets of one node.
	MinSockets, MaxSockets int
}

// Role sums up the usage of the nodes of one role ("location" or "checker").
func (r Resources) Role(role string) RoleUsage {
	var u RoleUsage
	for _, x := range r.Nodes {
		if x.Role != role {
			continue
		}
		if u.Nodes == 0 || x.Goroutines < u.MinGoroutines {
			u.MinGoroutines = x.Goroutines
		}
		if u.Nodes == 0 || x.Sockets < u.MinSockets {
			u.MinSockets = x.Sockets
		}
		u.Nodes++
		u.MeanGoroutines += float64(x.Goroutines)
		u.MeanSockets += float64(x.Sockets)
		u.MaxGoroutines = max(u.MaxGoroutines, x.Goroutines)
		u.MaxSockets = max(u.MaxSockets, x.Sockets)
	}
	if u.Nodes > 0 {
		u.MeanGoroutines /= float64(u.Nodes)
		u.MeanSockets /= float64(u.Nodes)
	}
	return u
}

// HeapPerNode is the heap divided by the data-plane nodes.
func (r Resources) HeapPerNode() float64 { return r.perNode(r.Heap) }

// HeapHighPerNode is the high bound of the heap divided by the data-plane nodes.
func (r Resources) HeapHighPerNode() float64 { return r.perNode(r.HeapHigh) }

func (r Resources) perNode(b uint64) float64 {
	if len(r.Nodes) == 0 {
		return 0
	}
	return float64(b) / float64(len(r.Nodes))
}

// sub is a - b, or 0 when b is more.
func sub(a, b uint64) uint64 {
	if b >= a {
		return 0
	}
	return a - b
}

// Measure counts every data-plane node's goroutines (from the goroutine profile's labels) and
// sockets (from /proc/self/fd, each socket attributed by its local address), and the heap
// kept (HeapSample).
func (n *nodesNetwork) Measure(label string) (Resources, error) {
	res := Resources{Label: label}
	owner := map[string]int{}    // local address (ip:port) -> node
	byIP := map[netip.Addr]int{} // a checker's source address -> node
	for _, m := range n.Members() {
		res.Nodes = append(res.Nodes, Usage{Node: m.ID(), Role: m.Config().Roles.String()})
		i := len(res.Nodes) - 1
		if a := m.Node().DNSAddr(); a != "" {
			owner[a] = i
		}
		if m.Source().IsValid() {
			byIP[m.Source()] = i
		}
	}
	index := map[string]int{}
	for i, u := range res.Nodes {
		index[u.Node] = i
	}
	counts, unlabeled, err := goroutinesByNode()
	if err != nil {
		return res, err
	}
	res.Unlabeled = unlabeled
	for id, c := range counts {
		if i, ok := index[id]; ok {
			res.Nodes[i].Goroutines = c
		} else {
			res.Unlabeled += c // the voter's
		}
	}
	socks, err := openSockets()
	if err != nil {
		return res, err
	}
	for _, local := range socks {
		if i, ok := owner[local.String()]; ok {
			res.Nodes[i].Sockets++
		} else if i, ok := byIP[local.Addr()]; ok {
			res.Nodes[i].Sockets++
		} else {
			res.OtherSockets++
		}
	}
	res.HeapSample = quietHeap()
	res.Heap = sub(res.HeapSample.Kept(), n.heapBase)
	res.HeapHigh = sub(res.HeapSample.After, n.heapBase)
	slices.SortFunc(res.Nodes, func(a, b Usage) int { return strings.Compare(a.Node, b.Node) })
	return res, nil
}

// goroutinesByNode counts the process's goroutines by their node label, from the goroutine
// profile; unlabeled counts the others.
func goroutinesByNode() (map[string]int, int, error) {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		return nil, 0, fmt.Errorf("sim: goroutine profile: %w", err)
	}
	return parseGoroutines(&b)
}

// parseGoroutines reads a goroutine profile in its debug=1 text form: records of
// "<count> @ <pcs>", each followed by "# labels: {...}" when its goroutines carry labels.
func parseGoroutines(b *bytes.Buffer) (map[string]int, int, error) {
	out := map[string]int{}
	unlabeled := 0
	pending := 0 // the count of the record whose labels line may follow
	in := bufio.NewScanner(b)
	in.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for in.Scan() {
		line := in.Text()
		if head, _, ok := strings.Cut(line, " @ "); ok && !strings.HasPrefix(line, "#") {
			unlabeled += pending
			c, err := strconv.Atoi(head)
			if err != nil {
				return nil, 0, fmt.Errorf("sim: goroutine profile: record %q", line)
			}
			pending = c
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# labels: "); ok && pending > 0 {
			var labels map[string]string
			if err := json.Unmarshal([]byte(rest), &labels); err != nil {
				return nil, 0, fmt.Errorf("sim: goroutine profile: labels %q: %w", rest, err)
			}
			if id, ok := labels[cluster.LabelNode]; ok {
				out[id] += pending
			} else {
				unlabeled += pending
			}
			pending = 0
		}
	}
	unlabeled += pending
	return out, unlabeled, in.Err()
}

// openSockets returns the local address of every socket the process holds open: the inodes
// of /proc/self/fd, looked up in /proc/self/net's TCP and UDP tables.
func openSockets() ([]netip.AddrPort, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("sim: open sockets: %w", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil {
			continue // closed since the listing
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var out []netip.AddrPort
	for _, table := range []string{"tcp", "tcp6", "udp", "udp6"} {
		f, err := os.Open(filepath.Join("/proc/self/net", table))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("sim: open sockets: %w", err)
		}
		in := bufio.NewScanner(f)
		for in.Scan() {
			fields := strings.Fields(in.Text())
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			if ap, err := parseProcAddr(fields[1]); err == nil {
				out = append(out, ap)
			}
		}
		err = in.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("sim: open sockets: %w", err)
		}
	}
	return out, nil
}

// parseProcAddr reads an address of /proc/net/tcp: the address in hex, in the host's byte
// order by 32-bit word (little-endian here), a colon and the port in hex.
func parseProcAddr(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok || (len(h) != 8 && len(h) != 32) {
		return netip.AddrPort{}, fmt.Errorf("address %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: %w", s, err)
	}
	var b [16]byte
	for w := 0; w < len(h)/8; w++ {
		v, err := strconv.ParseUint(h[w*8:w*8+8], 16, 32)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("address %q: %w", s, err)
		}
		b[w*4], b[w*4+1], b[w*4+2], b[w*4+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	if len(h) == 8 {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), uint16(port)), nil
	}
	return netip.AddrPortFrom(netip.AddrFrom16(b).Unmap(), uint16(port)), nil
}
