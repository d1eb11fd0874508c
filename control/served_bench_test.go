package control

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// BenchmarkPutRecordSetInZone: the leader's validation and apply of one new A record set in a
// zone of n simple A record sets: without delegations or aliases (n alone), and with them
// ("delegating-n": a delegation whose server has glue in the zone, and an alias), and of the
// glue's AAAA record set in the latter ("glue-n"). The check
// that the zone stays servable as written (served.go) reads the zone only when the name
// written is one that a delegation or an alias names (or near one): a write of an address
// elsewhere costs what a write of anything else does.
func BenchmarkPutRecordSetInZone(b *testing.B) {
	for _, delegating := range []bool{false, true} {
		for _, n := range []int{1000, 50000} {
			var sb strings.Builder
			sb.WriteString(`{"regions": ["us-east", "eu-west", "sa-east"], "zones": [{"name": "big.test", "record_sets": [`)
			for i := range n {
				if i > 0 {
					sb.WriteString(",")
				}
				fmt.Fprintf(&sb, `{"name": "h%d", "type": "A", "records": [{"value": "192.0.2.1"}]}`, i)
			}
			if delegating {
				sb.WriteString(`, {"name": "sub", "type": "NS", "records": [{"value": "ns.sub.big.test."}]}`)
				sb.WriteString(`, {"name": "ns.sub", "type": "A", "records": [{"value": "192.0.2.53"}]}`)
				sb.WriteString(`, {"name": "www", "type": "A", "alias": "h1"}`)
			}
			sb.WriteString("]}]}")
			doc, err := decodeDocument([]byte(sb.String()))
			if err != nil {
				b.Fatal(err)
			}
			base := state.NewState(doc)
			cmd := &state.Command{Op: state.OpPutRecordSet, ZoneName: "big.test.", RecordSet: &config.RecordSet{Name: "new", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.9"}}}}
			name := fmt.Sprint(n)
			if delegating {
				name = "delegating-" + name
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					if _, err := state.ApplyCommand(base, cmd, base.Index+1); err != nil {
						b.Fatal(err)
					}
				}
			})
			if !delegating {
				continue
			}
			// An address of the delegation's server (glue) is near a name the delegation
			// names: the zone is read whole, before and after.
			glue := &state.Command{Op: state.OpPutRecordSet, ZoneName: "big.test.", RecordSet: &config.RecordSet{Name: "ns.sub", Type: config.TypeAAAA, Records: []config.Record{{Value: "2001:db8::53"}}}}
			b.Run(fmt.Sprint("glue-", n), func(b *testing.B) {
				for b.Loop() {
					if _, err := state.ApplyCommand(base, glue, base.Index+1); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
