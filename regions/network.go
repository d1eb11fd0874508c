// Package regions models Vigil's named regions, the links between them and their faults. Its
// Link, Fault (with a text form) and Faults are the one vocabulary of link faults that the
// demo's routers, netlab, the simulation, `vigil dev` and the oracle speak. Its in-memory
// memberlist Transport and probe dialer carry links that can be cut (both ways or one way),
// slowed, made lossy (from a seeded source) and healed; the simulation, `vigil dev` and the
// tests put it where the real network would be, inside a testing/synctest bubble.
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

// Network is a set of named regions and the links between them. Its methods are safe for
// concurrent use. The zero value is not usable: call NewNetwork.
type Network struct {
	mu      sync.Mutex
	rng     *rand.Rand
	regions map[string]int
	faults  *Faults
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
		faults:  NewFaults(),
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
	n.faults.addRegion(name)
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

// Apply changes the links by one fault (see Faults.Apply).
func (n *Network) Apply(f Fault) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.faults.Apply(f)
}

// Cut cuts the link between regions a and b in both directions.
func (n *Network) Cut(a, b string) error { return n.Apply(Fault{Kind: Cut, A: a, B: b}) }

// CutOneWay cuts the link from region from to region to only: packets from `from` are lost
// on the way to `to`, so `from` still hears `to` but `to` does not hear `from`.
// Connections between them fail either way, as TCP needs both directions.
func (n *Network) CutOneWay(from, to string) error {
	return n.Apply(Fault{Kind: CutOneWay, A: from, B: to})
}

// Isolate cuts every link between region r and every other region.
func (n *Network) Isolate(r string) error { return n.Apply(Fault{Kind: Cut, A: r}) }

// Heal restores the link between a and b in both directions: no cut, no latency, no loss.
func (n *Network) Heal(a, b string) error { return n.Apply(Fault{Kind: Heal, A: a, B: b}) }

// HealAll restores every link of the network.
func (n *Network) HealAll() { _ = n.Apply(Fault{Kind: Heal}) }

// SetLatency sets the one-way latency of the link between a and b, both directions.
func (n *Network) SetLatency(a, b string, d time.Duration) error {
	return n.Apply(Fault{Kind: Latency, A: a, B: b, Delay: d})
}

// SetLoss sets the share of packets lost, in percent, on the link between a and b, both
// directions.
func (n *Network) SetLoss(a, b string, percent float64) error {
	return n.Apply(Fault{Kind: Loss, A: a, B: b, Loss: percent})
}

// SetLossAll sets the share of packets lost, in percent, on every link, within and between
// regions.
func (n *Network) SetLossAll(percent float64) error {
	for _, a := range n.Regions() {
		for _, b := range n.Regions() {
			if err := n.SetLoss(a, b, percent); err != nil {
				return err
			}
		}
	}
	return nil
}

// LinkState returns the state of the one-way link from region from to region to.
func (n *Network) LinkState(from, to string) State {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.faults.Of(Link{from, to})
}

func (n *Network) known(names ...string) error {
	for _, name := range names {
		if _, ok := n.regions[name]; !ok {
			return fmt.Errorf("%w %q", ErrUnknownRegion, name)
		}
	}
	return nil
}

// packet decides the fate of one packet from one region to another: whether it is delivered,
// and after how long.
func (n *Network) packet(from, to string) (bool, time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.faults.Of(Link{from, to})
	if l.Cut {
		return false, 0
	}
	if l.Loss > 0 && n.rng.Float64()*100 < l.Loss {
		return false, 0
	}
	d := l.Delay
	if l.Jitter > 0 {
		d += time.Duration(n.rng.Int64N(int64(2*l.Jitter)+1)) - l.Jitter
	}
	return true, max(d, 0)
}

// connect decides whether a connection from one region to another can be set up, and how
// long the handshake takes: both directions must be up.
func (n *Network) connect(from, to string) (bool, time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	there, back := n.faults.Of(Link{from, to}), n.faults.Of(Link{to, from})
	if there.Cut || back.Cut {
		return false, 0
	}
	return true, there.Delay + back.Delay
}
