package sim

// The ddos scenario (Route 53's shuffle sharding of name servers): its configuration and its
// run. Its network and document are in ddos_network.go, its probes in ddos_probe.go and
// ddos_measure.go, its flood in ddos_flood.go, what it reads of the node in ddos_metrics.go,
// its figures in ddos_figures.go and its report and bounds in ddos_report.go.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/checker/shard"
	"github.com/vigil-dns/vigil/config"
)

// DDoSName is the name of the query-flood scenario, which runs on its own network (one agent
// runtime with the control and location roles) rather than from a script.
const DDoSName = "ddos"

// DDoSConfig configures the ddos scenario. The zero value of a field means its default,
// listed with the field.
type DDoSConfig struct {
	// Zones is the number of zones of the document. Default 40.
	Zones int
	// Fleet and ShardSize are the virtual name servers of the sharded layout: Fleet servers,
	// ShardSize per zone, no two zones sharing more than 2. Default 16 and 4.
	Fleet, ShardSize int
	// Budget is the queries a second each virtual name server answers. Default 5,000.
	Budget int
	// FloodRate is the queries a second sent to each of the victim's name servers. Default
	// 25,000 (five times the default budget).
	FloodRate int
	// FloodSenders is the number of sending goroutines per victim name server. Default 1.
	FloodSenders int
	// Flood is how long the flood lasts. Default 6s.
	Flood time.Duration
	// Before is how long the zones are measured before the flood starts. Default 2s.
	Before time.Duration
	// ProbeInterval is how often each zone is asked one query on each of its name servers.
	// Default 100ms.
	ProbeInterval time.Duration
	// ProbeTimeout is how long a probe waits for its answer before it counts as unanswered.
	// Default 1s.
	ProbeTimeout time.Duration
	// TryTimeout is how long a resolver's try of one name server waits before it tries the
	// zone's next server. Default 250ms.
	TryTimeout time.Duration
	// Unsharded also runs the same flood with every zone on the same ShardSize servers, for
	// comparison. Default off.
	Unsharded bool
	// DataDir holds the node's data directories (raft log, disk copy). Required.
	DataDir string
	// Timeline, when set, receives a line per step as the scenario runs.
	Timeline io.Writer
	// Logger receives the node's logs; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with every default filled in.
func (c DDoSConfig) withDefaults() DDoSConfig {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Zones, 40)
	def(&c.Fleet, 16)
	def(&c.ShardSize, 4)
	def(&c.Budget, 5000)
	def(&c.FloodRate, 25000)
	def(&c.FloodSenders, 1)
	defDur(&c.Flood, 6*time.Second)
	defDur(&c.Before, 2*time.Second)
	defDur(&c.ProbeInterval, 100*time.Millisecond)
	defDur(&c.ProbeTimeout, time.Second)
	defDur(&c.TryTimeout, 250*time.Millisecond)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Bounds of DDoSConfig, so that a run stays bounded in time and traffic.
const (
	maxDDoSZones       = 200
	maxDDoSFleet       = 64
	maxDDoSFlood       = 60 * time.Second
	maxDDoSFloodRate   = 1_000_000
	maxDDoSSenders     = 16
	minDDoSProbeEvery  = 10 * time.Millisecond
	maxDDoSProbeWindow = 5 * time.Second
)

// validate reports a configuration out of bounds.
func (c DDoSConfig) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Zones < 2 || c.Zones > maxDDoSZones {
		bad("zones %d: want 2 to %d", c.Zones, maxDDoSZones)
	}
	if c.Fleet > maxDDoSFleet || c.ShardSize > c.Fleet || c.ShardSize < 3 {
		bad("fleet %d, shard size %d: want a shard size of 3 to the fleet, a fleet of at most %d", c.Fleet, c.ShardSize, maxDDoSFleet)
	}
	if c.Flood > maxDDoSFlood || c.Before > maxDDoSFlood {
		bad("flood %v, before %v: at most %v each", c.Flood, c.Before, maxDDoSFlood)
	}
	if c.FloodRate > maxDDoSFloodRate {
		bad("flood rate %d: at most %d a second per server", c.FloodRate, maxDDoSFloodRate)
	}
	if c.FloodSenders > maxDDoSSenders {
		bad("flood senders %d: at most %d per server", c.FloodSenders, maxDDoSSenders)
	}
	if c.ProbeInterval < minDDoSProbeEvery || c.ProbeTimeout > maxDDoSProbeWindow || c.TryTimeout > maxDDoSProbeWindow {
		bad("probe interval %v, timeout %v: at least %v and at most %v", c.ProbeInterval, c.ProbeTimeout, minDDoSProbeEvery, maxDDoSProbeWindow)
	}
	if c.DataDir == "" {
		bad("no data directory")
	}
	return errors.Join(errs...)
}

// RunDDoS runs the ddos scenario: one agent runtime (package node) with the control role
// (raft with its BoltDB log, the name-server allocator) and the location role, hosting every
// virtual name server on its own loopback address, serves a document of many zones. One
// zone's name servers are flooded over UDP while every zone is asked, on each of its name
// servers, before and during the flood. With cfg.Unsharded the same runs again with every zone
// on the same servers.
func RunDDoS(ctx context.Context, cfg DDoSConfig) (DDoSResult, error) {
	cfg = cfg.withDefaults()
	res := DDoSResult{Config: cfg}
	if err := cfg.validate(); err != nil {
		return res, fmt.Errorf("sim: ddos: %w", err)
	}
	sharded := config.NameServerSettings{Domain: "ns.ddos.vigil.test.", Fleet: cfg.Fleet, ShardSize: cfg.ShardSize,
		MaxOverlap: 2, Mode: shard.ModeStateful}
	run, err := runDDoSLayout(ctx, cfg, sharded, filepath.Join(cfg.DataDir, "sharded"))
	res.Sharded = run
	if err != nil || !cfg.Unsharded {
		return res, err
	}
	unsharded := config.NameServerSettings{Domain: "ns.ddos.vigil.test.", Fleet: cfg.ShardSize, ShardSize: cfg.ShardSize,
		MaxOverlap: cfg.ShardSize, Mode: shard.ModeStateful}
	res.Unsharded, err = runDDoSLayout(ctx, cfg, unsharded, filepath.Join(cfg.DataDir, "unsharded"))
	return res, err
}

// runDDoSLayout runs the scenario on one name-server layout.
func runDDoSLayout(ctx context.Context, cfg DDoSConfig, ns config.NameServerSettings, dir string) (*DDoSRun, error) {
	doc, err := ddosDocument(cfg.Zones, ns)
	if err != nil {
		return nil, err
	}
	layout := fmt.Sprintf("fleet %d, shard size %d, overlap at most %d (stateful allocator)", ns.Fleet, ns.ShardSize, min(ns.MaxOverlap, ns.ShardSize))
	if ns.Fleet == ns.ShardSize {
		layout = fmt.Sprintf("no sharding: every zone on the same %d servers", ns.Fleet)
	}
	timeline(cfg.Timeline, "layout: %s; %d zones", layout, cfg.Zones)
	dn, err := startDDoSNode(ctx, cfg, doc, dir)
	if err != nil {
		return nil, err
	}
	run := &DDoSRun{Layout: layout, Zones: cfg.Zones}
	err = func() error {
		fleet, err := shard.NewNameServers(ns)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		shards, err := awaitShards(ctx, dn.node, fleet, cfg.Zones)
		if err != nil {
			return err
		}
		const victim = 0
		run.Victim, run.VictimServers = ddosZone(victim), shards[victim]
		targets, err := ddosTargets(dn.node, shards, victim)
		if err != nil {
			return err
		}
		if err := awaitAnswers(ctx, targets, cfg.ProbeTimeout); err != nil {
			return err
		}
		names := fleet.Names(run.VictimServers)
		timeline(cfg.Timeline, "ready: victim %s on %s", run.Victim, strings.Join(names, ", "))
		return measure(ctx, cfg, dn.node, run, targets)
	}()
	if serr := dn.stop(); err == nil && serr != nil && ctx.Err() == nil {
		err = fmt.Errorf("sim: ddos node: %w", serr)
	}
	return run, err
}

// timeline writes one line to w, when set.
func timeline(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "  "+format+"\n", args...)
	}
}
