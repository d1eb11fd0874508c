package sim

// The poison scenario (Route 53's shuffle sharding of checks): its networks' layout and the
// document they serve. The network is in poison_network.go, its hostile endpoints in
// poison_hostile.go, its figures in poison_figures.go and their report in poison_report.go.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/lab/dev"
)

// Poison networks: the nodes network with six checkers per region, many ordinary checks and
// two hostile endpoints (one hangs every connection, one floods every response).
const (
	// NetworkPoison shards every check over 2 of the 6 checkers of each region.
	NetworkPoison = "poison"
	// NetworkPoisonUnsharded has every checker probe every check: sharding off.
	NetworkPoisonUnsharded = "poison-unsharded"
)

// The poison networks' layout.
const (
	poisonCheckers    = 6  // checkers per region
	poisonShard       = 2  // checkers_per_region of every check, sharded
	ordinaryPerRegion = 20 // ordinary HTTP checks per region
	// smallPool is the worker pool of the second half of each region's checkers (the first
	// half keep checker.DefaultConcurrency): the same run shows what the pool's size buys.
	smallPool = 1
	// hostileTarget is the fault model's name for where the hostile endpoints are: down
	// while they are poisoned, reached from every region.
	hostileTarget = "hostile"
	// maxProbeRecords bounds the probe results a poison network keeps.
	maxProbeRecords = 400_000
	// maxHostileConns bounds the connections a hostile endpoint holds at once; more are
	// closed at once.
	maxHostileConns = 512
	// maxHostileHold bounds how long a hostile endpoint holds or floods one connection.
	maxHostileHold = 30 * time.Second
)

// hostileCheck is a check of a hostile endpoint: its id, the endpoint's kind, its path and
// the body it looks for.
type hostileCheck struct{ id, kind, path, match string }

// hostileChecks returns the hostile checks: two hang on the hang endpoint, two are flooded by
// the flood endpoint (endless headers; an endless body where the check looks for a match).
func hostileChecks() []hostileCheck {
	return []hostileCheck{
		{"hang-1", hostileHang, "/hang/1", ""},
		{"hang-2", hostileHang, "/hang/2", ""},
		{"flood-headers", hostileFlood, "/headers", ""},
		{"flood-body", hostileFlood, "/body", "ok"},
	}
}

// poisonKind is the poison network of the given name: its document adds the ordinary and
// hostile checks, and it starts their targets with the nodes.
func poisonKind(name string) networkKind {
	return networkKind{
		document: func(doc *config.Document, targets map[string]string, regions []string) (*config.Document, error) {
			return poisonDocument(doc, targets, regions, name)
		},
		start: func(ctx context.Context, o Options, cfg dev.Config, doc *config.Document) (network, func() error, error) {
			n, err := startPoison(ctx, cfg, doc, o)
			if err != nil {
				return nil, nil, err
			}
			return n, n.wait, nil
		},
	}
}

// poisonCheck returns an ordinary-looking HTTP check of 1s interval and 500ms timeout, as the
// demo's are.
func poisonCheck(id string, port int, path string, k int) config.Check {
	c := config.DefaultCheck()
	c.ID, c.Protocol, c.Path = id, config.ProtocolHTTP, path
	c.Target = config.Target{Host: "127.0.0.1", Port: port}
	c.Interval, c.Timeout = config.Duration(time.Second), config.Duration(500*time.Millisecond)
	c.FailureThreshold, c.SuccessThreshold = 3, 2
	c.CheckersPerRegion = k
	return c
}

// poisonDocument adds to doc the poison network's checks: ordinaryPerRegion ordinary checks
// of one target per region, and the hostile checks; and a multivalue record set "pool" that
// serves some of each. targets learns the region of every new check (hostileTarget for the
// hostile ones). Every check of the unsharded network, the demo's included, is probed by
// every checker.
func poisonDocument(doc *config.Document, targets map[string]string, regions []string, network string) (*config.Document, error) {
	out := *doc
	out.Checks = slices.Clone(doc.Checks)
	k := poisonShard
	if network == NetworkPoisonUnsharded {
		k = poisonCheckers
		for i := range out.Checks {
			out.Checks[i].CheckersPerRegion = k
		}
	}
	var pool []config.Record
	for ri, r := range regions {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		for i := range ordinaryPerRegion {
			id := fmt.Sprintf("svc-%s-%02d", r, i+1)
			out.Checks = append(out.Checks, poisonCheck(id, port, "/svc/"+strconv.Itoa(i+1), k))
			targets[id] = r
			if i == 0 {
				pool = append(pool, config.Record{Value: fmt.Sprintf("192.0.2.%d", 10+ri), HealthCheck: id})
			}
		}
	}
	hang, err := freePort()
	if err != nil {
		return nil, err
	}
	flood, err := freePort()
	if err != nil {
		return nil, err
	}
	for i, h := range hostileChecks() {
		port := hang
		if h.kind == hostileFlood {
			port = flood
		}
		c := poisonCheck(h.id, port, h.path, k)
		c.BodyMatch = h.match
		out.Checks = append(out.Checks, c)
		targets[h.id] = hostileTarget
		pool = append(pool, config.Record{Value: fmt.Sprintf("198.51.100.%d", 20+i), HealthCheck: h.id})
	}
	if len(out.Zones) == 0 {
		return nil, errors.New("sim: poison: the document has no zone for the record set pool")
	}
	out.Zones = slices.Clone(doc.Zones)
	z := &out.Zones[0]
	z.RecordSets = append(slices.Clone(z.RecordSets), config.RecordSet{
		Name: "pool." + z.Name, Type: config.TypeA, Policy: config.PolicyMultivalue, Records: pool,
	})
	return &out, nil
}
