package shard

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-dns/vigil/config"
)

// The name-server sharding modes of config.NameServerSettings.
const (
	// ModeStateless derives a zone's name servers from its name alone, with no overlap
	// guarantee.
	ModeStateless = "stateless"
	// ModeStateful allocates them with Allocator, which guarantees the overlap limit.
	ModeStateful = "stateful"
)

// maxFleet bounds the fleet so that a server number fits in 16 bits.
const maxFleet = 1 << 16

// NameServers is a validated fleet of virtual name servers: how they are named, and each
// zone's stateless shard.
type NameServers struct {
	domain     string
	fleet      int
	shardSize  int
	maxOverlap int
	mode       string
}

// NewNameServers validates settings and returns the fleet they describe.
func NewNameServers(s config.NameServerSettings) (*NameServers, error) {
	var errs []error
	domain := CanonicalName(s.Domain)
	if domain == "." {
		errs = append(errs, errors.New("shard: name_servers.domain is empty"))
	}
	if s.Fleet < 1 || s.Fleet > maxFleet {
		errs = append(errs, fmt.Errorf("shard: name_servers.fleet %d, want 1 to %d", s.Fleet, maxFleet))
	}
	if s.ShardSize < 1 || s.ShardSize > s.Fleet || s.ShardSize > 64 {
		errs = append(errs, fmt.Errorf("shard: name_servers.shard_size %d, want 1 to min(fleet, 64)", s.ShardSize))
	}
	if s.MaxOverlap < 0 {
		errs = append(errs, fmt.Errorf("shard: name_servers.max_overlap %d is negative", s.MaxOverlap))
	}
	mode := s.Mode
	if mode == "" {
		mode = ModeStateless
	}
	if mode != ModeStateless && mode != ModeStateful {
		errs = append(errs, fmt.Errorf("shard: name_servers.mode %q, want %q or %q", s.Mode, ModeStateless, ModeStateful))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &NameServers{domain: domain, fleet: s.Fleet, shardSize: s.ShardSize, maxOverlap: s.MaxOverlap, mode: mode}, nil
}

// Fleet returns the number of virtual name servers.
func (n *NameServers) Fleet() int { return n.fleet }

// ShardSize returns the number of name servers per zone.
func (n *NameServers) ShardSize() int { return n.shardSize }

// MaxOverlap returns the most name servers two zones may share in stateful mode.
func (n *NameServers) MaxOverlap() int { return n.maxOverlap }

// Mode returns ModeStateless or ModeStateful.
func (n *NameServers) Mode() string { return n.mode }

// Name returns the host name of virtual name server i: "ns-<i>.<domain>".
func (n *NameServers) Name(i int) string {
	return "ns-" + strconv.Itoa(i) + "." + n.domain
}

// Names returns the host names of servers: a zone's NS records.
func (n *NameServers) Names(servers []int) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = n.Name(s)
	}
	return out
}

// Index returns the number of the virtual name server a host name names, or an error when it
// is not one of this fleet's names.
func (n *NameServers) Index(name string) (int, error) {
	host := CanonicalName(name)
	num, ok := strings.CutPrefix(host, "ns-")
	if ok {
		num, ok = strings.CutSuffix(num, "."+n.domain)
	}
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i < 0 || i >= n.fleet || strconv.Itoa(i) != num {
		return 0, fmt.Errorf("shard: %q is not a name server of the fleet ns-0 to ns-%d.%s", name, n.fleet-1, n.domain)
	}
	return i, nil
}

// Stateless returns the zone's name servers derived from its name alone, sorted: the same on
// every node with no coordination, but with no limit on what two zones share.
func (n *NameServers) Stateless(zone string) []int {
	return n.candidate(HashKey(CanonicalName(zone)), 0)
}

// Of returns the name servers of zone z: none for a zone that lists its own; in stateful
// mode the allocation stored for it (stored, the control plane's), when there is one; else its
// stateless shard.
func (n *NameServers) Of(z *config.Zone, stored func(zone string) []int) []int {
	if len(z.NameServers) > 0 {
		return nil
	}
	if n.mode == ModeStateful {
		if servers := stored(z.Name); len(servers) > 0 {
			return servers
		}
	}
	return n.Stateless(z.Name)
}

// candidate returns the attempt-th pseudo-random shard for a zone hash, sorted. Attempt 0 is
// the stateless shard, so a stateful zone keeps its stateless servers whenever they fit.
func (n *NameServers) candidate(h uint64, attempt int) []int {
	st := stream{state: h ^ mix64(uint64(attempt)*golden)}
	out := make([]int, 0, n.shardSize)
	for len(out) < n.shardSize {
		s := st.below(n.fleet)
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// CanonicalName returns a domain name in lower case with one final dot, so that
// "Example.COM" and "example.com." shard alike.
func CanonicalName(name string) string {
	if isCanonical(name) {
		return name
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), ".")) + "."
}

// isCanonical reports whether name is already lower case ASCII with one final dot and no
// surrounding space, so that CanonicalName need not copy it.
func isCanonical(name string) bool {
	n := len(name)
	if n < 2 || name[n-1] != '.' || name[n-2] == '.' {
		return false
	}
	for i := range n {
		c := name[i]
		if c <= ' ' || c >= 0x80 || ('A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// subsetBits returns how many bits one server number takes in a packed subset.
func (n *NameServers) subsetBits() int {
	b := bits.Len(uint(n.fleet - 1))
	return max(b, 1)
}
