package control

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// BenchmarkPutRecordSetInZone: the leader's validation and apply of one new A record set in a
// zone of n simple A record sets, without delegations or aliases. The check that the zone
// stays servable as written (served.go) reads such a zone once to learn that it delegates
// nothing and aliases nothing: what a write of an address costs above a write of anything else.
func BenchmarkPutRecordSetInZone(b *testing.B) {
	for _, n := range []int{1000, 50000} {
		var sb strings.Builder
		sb.WriteString(`{"regions": ["us-east", "eu-west", "sa-east"], "zones": [{"name": "big.test", "record_sets": [`)
		for i := range n {
			if i > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, `{"name": "h%d", "type": "A", "records": [{"value": "192.0.2.1"}]}`, i)
		}
		sb.WriteString("]}]}")
		doc, err := decodeDocument([]byte(sb.String()))
		if err != nil {
			b.Fatal(err)
		}
		base := NewState(doc)
		cmd := &Command{Op: OpPutRecordSet, ZoneName: "big.test.", RecordSet: &config.RecordSet{Name: "new", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.9"}}}}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := applyCommand(base, cmd, base.Index+1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
