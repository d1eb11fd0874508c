package netlab

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
)

// faultTable is the nftables table, in every region's namespace, that holds the link faults.
const faultTable = "vglfault"

// dir is one direction between two regions: packets from From to To.
type dir struct{ From, To string }

// linkFaults are the faults in force on the links, each by direction. Every fault is
// applied where the packets arrive: the receiving namespace's input hook drops them, so a
// sender sees a black hole (no error, no reset), as across a real cut.
type linkFaults struct {
	// Cut holds the directions whose packets are all dropped.
	Cut map[dir]bool
	// Loss holds the share of packets dropped, in percent, by direction (0 to 100).
	Loss map[dir]float64
}

// newLinkFaults returns no fault.
func newLinkFaults() linkFaults { return linkFaults{Cut: map[dir]bool{}, Loss: map[dir]float64{}} }

// rules returns the nft script that replaces the fault table of region to's namespace, in
// one transaction: a drop rule per region whose packets to it are cut, a random drop per
// region whose packets to it are lossy. regions lists every region in order.
func (f linkFaults) rules(regions []*Region, to *Region) string {
	var b strings.Builder
	// Declaring the table first makes the delete succeed when it does not exist yet.
	fmt.Fprintf(&b, "table inet %s\ndelete table inet %s\ntable inet %s {\n", faultTable, faultTable, faultTable)
	b.WriteString("\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n")
	for _, from := range regions {
		if from == to {
			continue
		}
		d := dir{from.Name, to.Name}
		src := regionPrefix(from.Index)
		switch p := f.Loss[d]; {
		case f.Cut[d]:
			fmt.Fprintf(&b, "\t\tip saddr %s drop\n", src)
		case p > 0:
			// In hundredths of a percent.
			fmt.Fprintf(&b, "\t\tip saddr %s numgen random mod 10000 < %d drop\n", src, int(math.Round(p*100)))
		}
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// apply installs the faults in the namespaces of the regions named in changed (every
// region when changed is empty).
func (f linkFaults) apply(ctx context.Context, t *Topology, changed ...string) error {
	for _, r := range t.Regions {
		if len(changed) > 0 && !slices.Contains(changed, r.Name) {
			continue
		}
		if err := command(ctx, strings.NewReader(f.rules(t.Regions, r)), "ip", "netns", "exec", r.NS.Name, "nft", "-f", "-"); err != nil {
			return err
		}
	}
	return nil
}
