package control

import (
	"fmt"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// BenchmarkAuditedApply: what recording a write in the audit log adds to applying it: one
// put_check applied to a state of 10,000 checks whose audit log is full (10,000 entries, the
// oldest dropped by each write), with and without its audit record, in the same run.
func BenchmarkAuditedApply(b *testing.B) {
	s := state.Empty()
	d := config.DefaultDocument()
	d.Regions = []string{"a", "b", "c"}
	e := s.Edit(1)
	e.SetSettings(&d)
	for i := range 10000 {
		c := config.DefaultCheck()
		c.ID, c.Protocol, c.Target, c.Regions = fmt.Sprintf("c-%d", i), config.ProtocolTCP, config.Target{Host: "192.0.2.1", Port: 1 + i}, d.Regions
		e.PutCheck(&c)
	}
	s = e.Next
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range state.MaxAuditEntries {
		ne, err := state.ApplyCommand(s, &state.Command{Op: state.OpAuditNote, Audit: &state.AuditInfo{Time: at, Token: "t", Summary: "fill"}}, uint64(2+i))
		if err != nil {
			b.Fatal(err)
		}
		s = ne.Next
	}
	for _, audit := range []bool{false, true} {
		b.Run(fmt.Sprintf("audit=%v", audit), func(b *testing.B) {
			cur, idx := s, s.Index
			for i := 0; b.Loop(); i++ {
				c := config.DefaultCheck()
				c.ID, c.Protocol, c.Target, c.Regions = fmt.Sprintf("c-%d", i%10000), config.ProtocolTCP, config.Target{Host: "192.0.2.2", Port: 1 + i%60000}, d.Regions
				cmd := &state.Command{Op: state.OpPutCheck, Check: &c}
				if audit {
					cmd.Audit = &state.AuditInfo{Time: at, Token: "write-token-1", Method: "PUT", Path: "/v1/checks/" + c.ID, Summary: summarize(cmd)}
				}
				idx++
				ne, err := state.ApplyCommand(cur, cmd, idx)
				if err != nil {
					b.Fatal(err)
				}
				cur = ne.Next
			}
		})
	}
}
