// Package regions models Vigil's named regions and a simulated network between them. Its
// in-memory memberlist Transport and probe dialer carry links between two regions that can be
// cut (both ways or one way), slowed, made lossy (from a seeded source) and healed. The
// simulation, `vigil dev` and the tests put it where the real network would be; it runs inside
// a testing/synctest bubble, so minutes of gossip take seconds.
package regions

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"
)

// ErrUnknownRegion is returned when a region has not been added to the network.
var ErrUnknownRegion = errors.New("regions: unknown region")

// Link is the state of the one-way link from one region to another (or within one region).
type Link struct {
	// Cut drops every packet and fails every connection on the link.
	Cut bool
	// Latency delays every packet and every new connection.
	Latency time.Duration
	// Loss is the probability, 0 to 1, that one packet is dropped.
	Loss float64
}

type pair struct{ from, to string }

// Network is a set of named regions and the links between them. Its methods are safe for
// concurrent use. The zero value is not usable: call NewNetwork.
type Network struct {
	mu      sync.Mutex
	rng     *rand.Rand
	regions map[string]int
	links   map[pair]Link
	byAddr  map[string]*Transport
	targets map[string]string
	hosts   int
}

// NewNetwork returns a network of the named regions, every link healthy, whose packet loss
// draws from a source seeded with seed.
func NewNetwork(seed uint64, names ...string) (*Network, error) {
	n := &Network{
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		regions: map[string]int{},
		links:   map[pair]Link{},
		byAddr:  map[string]*Transport{},
		targets: map[string]string{},
	}
	for _, name := range names {
		if err := n.AddRegion(name); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// AddRegion adds a region. Adding a region twice is an error.
func (n *Network) AddRegion(name string) error {
	if name == "" {
		return errors.New("regions: empty region name")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.regions[name]; ok {
		return fmt.Errorf("regions: region %q added twice", name)
	}
	if len(n.regions) >= 250 {
		return errors.New("regions: at most 250 regions")
	}
	n.regions[name] = len(n.regions) + 1
	return nil
}

// Regions returns the names of the regions, sorted.
func (n *Network) Regions() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.regions))
	for name := range n.regions {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func (n *Network) known(names ...string) error {
	for _, name := range names {
		if _, ok := n.regions[name]; !ok {
			return fmt.Errorf("%w %q", ErrUnknownRegion, name)
		}
	}
	return nil
}

// update changes the link from a to b, and from b to a unless oneWay.
func (n *Network) update(a, b string, oneWay bool, f func(*Link)) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.known(a, b); err != nil {
		return err
	}
	ps := []pair{{a, b}}
	if !oneWay && a != b {
		ps = append(ps, pair{b, a})
	}
	for _, p := range ps {
		l := n.links[p]
		f(&l)
		if l == (Link{}) {
			delete(n.links, p)
		} else {
			n.links[p] = l
		}
	}
	return nil
}

// Cut cuts the link between regions a and b in both directions.
func (n *Network) Cut(a, b string) error {
	return n.update(a, b, false, func(l *Link) { l.Cut = true })
}

// CutOneWay cuts the link from region from to region to only: packets from `from` are lost
// on the way to `to`, so `from` still hears `to` but `to` does not hear `from`.
// Connections between them fail either way, as TCP needs both directions.
func (n *Network) CutOneWay(from, to string) error {
	return n.update(from, to, true, func(l *Link) { l.Cut = true })
}

// Isolate cuts every link between region r and every other region.
func (n *Network) Isolate(r string) error {
	for _, other := range n.Regions() {
		if other != r {
			if err := n.Cut(r, other); err != nil {
				return err
			}
		}
	}
	return nil
}

// Heal restores the link between a and b in both directions: no cut, no latency, no loss.
func (n *Network) Heal(a, b string) error {
	return n.update(a, b, false, func(l *Link) { *l = Link{} })
}

// HealAll restores every link of the network.
func (n *Network) HealAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.links)
}

// SetLatency sets the one-way latency of the link between a and b, both directions.
func (n *Network) SetLatency(a, b string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("regions: negative latency %v", d)
	}
	return n.update(a, b, false, func(l *Link) { l.Latency = d })
}

// SetLoss sets the packet loss probability of the link between a and b, both directions.
func (n *Network) SetLoss(a, b string, p float64) error {
	if !(p >= 0 && p <= 1) {
		return fmt.Errorf("regions: loss %v is not between 0 and 1", p)
	}
	return n.update(a, b, false, func(l *Link) { l.Loss = p })
}

// SetLossAll sets the packet loss probability of every link, within and between regions.
func (n *Network) SetLossAll(p float64) error {
	for _, a := range n.Regions() {
		for _, b := range n.Regions() {
			if err := n.update(a, b, true, func(l *Link) { l.Loss = p }); err != nil {
				return err
			}
		}
	}
	return nil
}

// LinkState returns the state of the one-way link from region from to region to.
func (n *Network) LinkState(from, to string) Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links[pair{from, to}]
}

// packet decides the fate of one packet from one region to another: whether it is delivered,
// and after how long.
func (n *Network) packet(from, to string) (bool, time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.links[pair{from, to}]
	if l.Cut {
		return false, 0
	}
	if l.Loss > 0 && n.rng.Float64() < l.Loss {
		return false, 0
	}
	return true, l.Latency
}

// connect decides whether a connection from one region to another can be set up, and how
// long the handshake takes: both directions must be up.
func (n *Network) connect(from, to string) (bool, time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	there, back := n.links[pair{from, to}], n.links[pair{to, from}]
	if there.Cut || back.Cut {
		return false, 0
	}
	return true, there.Latency + back.Latency
}
