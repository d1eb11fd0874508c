package netlab

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vigil-dns/vigil/regions"
)

// faultTable is the nftables table, in every region's namespace, that holds the link faults.
const faultTable = "vglfault"

// faultRules returns the nft script that replaces the fault table of region to's namespace,
// in one transaction: a drop rule per region whose packets to it are cut, a random drop per
// region whose packets to it are lossy. regions lists every region in order. Every fault is
// applied where the packets arrive: the receiving namespace's input hook drops them, so a
// sender sees a black hole (no error, no reset), as across a real cut. Latency is the wires'
// (Link.SetShape).
func faultRules(f *regions.Faults, rs []*Region, to *Region) string {
	var b strings.Builder
	// Declaring the table first makes the delete succeed when it does not exist yet.
	fmt.Fprintf(&b, "table inet %s\ndelete table inet %s\ntable inet %s {\n", faultTable, faultTable, faultTable)
	b.WriteString("\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n")
	for _, from := range rs {
		if from == to {
			continue
		}
		src := regionPrefix(from.Index)
		switch s := f.Of(regions.Link{From: from.Name, To: to.Name}); {
		case s.Cut:
			fmt.Fprintf(&b, "\t\tip saddr %s drop\n", src)
		case s.Loss > 0:
			// In hundredths of a percent.
			fmt.Fprintf(&b, "\t\tip saddr %s numgen random mod 10000 < %d drop\n", src, int(math.Round(s.Loss*100)))
		}
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// applyFaults installs the faults in the namespaces of the regions named in changed (every
// region when changed is empty).
func applyFaults(ctx context.Context, f *regions.Faults, t *Topology, changed ...string) error {
	for _, r := range t.Regions {
		if len(changed) > 0 && !slices.Contains(changed, r.Name) {
			continue
		}
		if err := command(ctx, strings.NewReader(faultRules(f, t.Regions, r)), "ip", "netns", "exec", r.NS.Name, "nft", "-f", "-"); err != nil {
			return err
		}
	}
	return nil
}
