package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vigil-dns/vigil/checker/shard"
	"github.com/vigil-dns/vigil/config"
	yaml "go.yaml.in/yaml/v3"
)

// analyzeOptions are the flags of vigil shard analyze.
type analyzeOptions struct {
	file, check, zone, membership, locations string
	perRegion, extra, top                    int
	asJSON                                   bool
}

// newAnalyzeFlags declares the flags of vigil shard analyze.
func newAnalyzeFlags(out io.Writer) (*flag.FlagSet, *analyzeOptions) {
	o := &analyzeOptions{}
	fs := newFlagSet("shard analyze", out)
	fs.StringVar(&o.file, "f", "", "configuration file (YAML or JSON)")
	fs.StringVar(&o.check, "check", "", "the check to analyse")
	fs.StringVar(&o.zone, "zone", "", "the zone to analyse")
	fs.StringVar(&o.membership, "membership", "", "YAML file: region name to list of checker ids")
	fs.IntVar(&o.perRegion, "checkers-per-region", 10, "synthesise this many checkers in each region (without --membership)")
	fs.IntVar(&o.extra, "extra", 0, "add this many synthetic checks or zones with default settings, as other customers")
	fs.IntVar(&o.top, "top", 10, "list at most this many of the most-overlapping others (-1: all)")
	fs.StringVar(&o.locations, "locations", "", "comma-separated DNS locations hosting the name servers (default: one per region)")
	fs.BoolVar(&o.asJSON, "json", false, "print the analysis as JSON")
	return fs, o
}

// maxExtra bounds --extra so that a typo cannot exhaust memory.
const maxExtra = 2_000_000

// runShard dispatches vigil shard's subcommands; analyze is the one there is.
func runShard(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, stop := dispatchHelp("shard", args, stdout, stderr); stop {
		return code
	}
	return runShardAnalyze(ctx, args[1:], stdout, stderr)
}

// analysis is what vigil shard analyze prints: the blast radius and, for a zone, where its
// name servers are.
type analysis struct {
	// Kind is "check" or "zone".
	Kind string `json:"kind"`
	shard.BlastRadius
	// Hosting lists, for a zone, each name server and the locations that host it.
	Hosting []hosting `json:"hosting,omitempty"`
	// Skipped are zones left out: their name servers are not on the virtual fleet.
	Skipped []string `json:"skipped,omitempty"`
}

// hosting is one virtual name server and its locations.
type hosting struct {
	Server    string   `json:"server"`
	Locations []string `json:"locations"`
}

// runShardAnalyze runs vigil shard analyze.
func runShardAnalyze(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, o := newAnalyzeFlags(stderr)
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	usageErr := func(msg string) int {
		fmt.Fprintf(stderr, "vigil shard analyze: %s\n", msg)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return usageErr(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	case o.file == "":
		return usageErr("-f FILE is required")
	case (o.check == "") == (o.zone == ""):
		return usageErr("give exactly one of --check ID and --zone NAME")
	case o.extra < 0 || o.extra > maxExtra:
		return usageErr(fmt.Sprintf("--extra %d, want 0 to %d", o.extra, maxExtra))
	case o.perRegion < 0 || o.perRegion > 1<<16:
		return usageErr(fmt.Sprintf("--checkers-per-region %d, want 0 to %d", o.perRegion, 1<<16))
	}
	doc, err := config.Load(o.file)
	if err != nil {
		fmt.Fprintf(stderr, "vigil shard analyze: %s:\n%v\n", o.file, err)
		return 1
	}
	var a analysis
	if o.check != "" {
		a, err = analyzeCheck(doc, o)
	} else {
		a, err = analyzeZone(doc, o)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vigil shard analyze: %v\n", err)
		return 1
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(a); err != nil {
			fmt.Fprintf(stderr, "vigil shard analyze: %v\n", err)
			return 1
		}
		return 0
	}
	printAnalysis(stdout, a)
	return 0
}

// analyzeCheck computes the blast radius of one check over the configuration's checks plus
// the synthetic ones.
func analyzeCheck(doc *config.Document, o *analyzeOptions) (analysis, error) {
	m, err := membership(doc, o)
	if err != nil {
		return analysis{}, err
	}
	for i := range o.extra {
		c := config.DefaultCheck()
		c.ID, c.Protocol = fmt.Sprintf("extra-%07d", i+1), config.ProtocolHTTP
		doc.Checks = append(doc.Checks, c)
	}
	p, err := shard.NewPlan(doc, m)
	if err != nil {
		return analysis{}, err
	}
	br, err := p.BlastRadius(o.check, o.top)
	if err != nil {
		return analysis{}, err
	}
	return analysis{Kind: "check", BlastRadius: br}, nil
}

// membership reads the membership file, or synthesises checkers per region.
func membership(doc *config.Document, o *analyzeOptions) (shard.Membership, error) {
	if o.membership == "" {
		m := shard.Membership{}
		for _, r := range doc.Regions {
			for i := range o.perRegion {
				m[r] = append(m[r], fmt.Sprintf("%s-checker-%02d", r, i+1))
			}
		}
		return m, nil
	}
	data, err := os.ReadFile(o.membership)
	if err != nil {
		return nil, fmt.Errorf("membership: %w", err)
	}
	var m shard.Membership
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("membership %s: want a mapping of region to list of checker ids: %w", o.membership, err)
	}
	owner := map[string]string{}
	for region, ids := range m {
		for _, id := range ids {
			if id == "" {
				return nil, fmt.Errorf("membership %s: region %s: empty checker id", o.membership, region)
			}
			if other, dup := owner[id]; dup && other != region {
				return nil, fmt.Errorf("membership %s: checker %q is in both %s and %s", o.membership, id, other, region)
			}
			owner[id] = region
		}
	}
	return m, nil
}

// analyzeZone computes the blast radius of one zone over the configuration's zones plus the
// synthetic ones, allocating name servers as the configuration's mode says.
func analyzeZone(doc *config.Document, o *analyzeOptions) (analysis, error) {
	ns, err := shard.NewNameServers(doc.NameServers)
	if err != nil {
		return analysis{}, err
	}
	alloc, err := ns.NewAllocator()
	if err != nil {
		return analysis{}, err
	}
	var a analysis
	a.Kind = "zone"
	subject := shard.CanonicalName(o.zone)
	var names []string
	shards := map[string][]int{}
	add := func(name string, servers []int) {
		if _, dup := shards[name]; !dup {
			names = append(names, name)
		}
		shards[name] = servers
	}
	for _, z := range doc.Zones {
		name := shard.CanonicalName(z.Name)
		servers, err := zoneServers(ns, alloc, name, z.NameServers)
		if err != nil {
			a.Skipped = append(a.Skipped, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		add(name, servers)
	}
	for i := range o.extra {
		name := fmt.Sprintf("extra-%07d.example.", i+1)
		servers, err := zoneServers(ns, alloc, name, nil)
		if err != nil {
			return analysis{}, fmt.Errorf("synthetic zone %d of %d: %w", i+1, o.extra, err)
		}
		add(name, servers)
	}
	mine, ok := shards[subject]
	if !ok {
		return analysis{}, fmt.Errorf("zone %s is not in %s with name servers of the fleet", subject, o.file)
	}
	all := func(yield func(string, []int) bool) {
		for _, n := range names {
			if !yield(n, shards[n]) {
				return
			}
		}
	}
	a.BlastRadius = shard.Analyze(subject, mine, all, o.top)
	a.Workers = ns.Names(mine)
	locations := doc.Regions
	if o.locations != "" {
		locations = strings.Split(o.locations, ",")
	}
	place := shard.NewPlacement(ns.Fleet(), locations, shard.DefaultServerLocations)
	for _, s := range mine {
		a.Hosting = append(a.Hosting, hosting{Server: ns.Name(s), Locations: place.Locations(s)})
	}
	return a, nil
}

// zoneServers returns a zone's name servers: the ones it names, when it names any, or else
// its shard by the fleet's mode.
func zoneServers(ns *shard.NameServers, alloc *shard.Allocator, name string, explicit []string) ([]int, error) {
	if len(explicit) > 0 {
		servers := make([]int, len(explicit))
		for i, host := range explicit {
			s, err := ns.Index(host)
			if err != nil {
				return nil, err
			}
			servers[i] = s
		}
		if ns.Mode() == shard.ModeStateful {
			if err := alloc.Restore(name, servers); err != nil {
				return nil, err
			}
		}
		return servers, nil
	}
	if ns.Mode() == shard.ModeStateful {
		return alloc.Allocate(name)
	}
	return ns.Stateless(name), nil
}

// printAnalysis writes the analysis for a person.
func printAnalysis(w io.Writer, a analysis) {
	worker := map[string]string{"check": "checkers", "zone": "name servers"}[a.Kind]
	others := map[string]string{"check": "checks", "zone": "zones"}[a.Kind]
	fmt.Fprintf(w, "%s %s: %d %s\n", a.Kind, a.Subject, len(a.Workers), worker)
	for _, h := range a.Hosting {
		fmt.Fprintf(w, "  %s  on %s\n", h.Server, strings.Join(h.Locations, ", "))
	}
	if len(a.Hosting) == 0 {
		for _, wk := range a.Workers {
			fmt.Fprintf(w, "  %s\n", wk)
		}
	}
	fmt.Fprintf(w, "\ncompared with %d other %s\n", a.Others, others)
	fmt.Fprintf(w, "  %-8s %10s %9s\n", "shared", others, "share")
	for n, count := range a.Histogram {
		pct := 0.0
		if a.Others > 0 {
			pct = 100 * float64(count) / float64(a.Others)
		}
		fmt.Fprintf(w, "  %-8d %10d %8.2f%%\n", n, count, pct)
	}
	fmt.Fprintf(w, "\nfully contained in its shard (would lose every one of their %s if it were poisoned): %d\n", worker, a.Contained)
	if len(a.Neighbors) > 0 {
		fmt.Fprintf(w, "\nmost overlapping:\n")
		for _, n := range a.Neighbors {
			fmt.Fprintf(w, "  %-40s shares %d of its %d\n", n.Name, n.Shared, n.Size)
		}
		if a.MoreNeighbors > 0 {
			fmt.Fprintf(w, "  ... and %d more sharing at least one\n", a.MoreNeighbors)
		}
	}
	for _, s := range a.Skipped {
		fmt.Fprintf(w, "skipped %s\n", s)
	}
}
