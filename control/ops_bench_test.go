package control

import (
	"fmt"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// BenchmarkAuditedApply: what recording a write in the audit log adds to applying it: one
// put_check applied to a state of 10,000 checks whose audit log is full (10,000 entries, the
// oldest dropped by each write), with and without its audit record, in the same run.
func BenchmarkAuditedApply(b *testing.B) {
	s := emptyState()
	d := config.DefaultDocument()
	d.Regions = []string{"a", "b", "c"}
	e := s.edit(1)
	e.setSettings(&d)
	for i := range 10000 {
		c := config.DefaultCheck()
		c.ID, c.Protocol, c.Target, c.Regions = fmt.Sprintf("c-%d", i), config.ProtocolTCP, config.Target{Host: "192.0.2.1", Port: 1 + i}, d.Regions
		e.putCheck(&c)
	}
	s = e.s
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range MaxAuditEntries {
		ne, err := applyCommand(s, &Command{Op: OpAuditNote, Audit: &AuditInfo{Time: at, Token: "t", Summary: "fill"}}, uint64(2+i))
		if err != nil {
			b.Fatal(err)
		}
		s = ne.s
	}
	for _, audit := range []bool{false, true} {
		b.Run(fmt.Sprintf("audit=%v", audit), func(b *testing.B) {
			cur, idx := s, s.Index
			for i := 0; b.Loop(); i++ {
				c := config.DefaultCheck()
				c.ID, c.Protocol, c.Target, c.Regions = fmt.Sprintf("c-%d", i%10000), config.ProtocolTCP, config.Target{Host: "192.0.2.2", Port: 1 + i%60000}, d.Regions
				cmd := &Command{Op: OpPutCheck, Check: &c}
				if audit {
					cmd.Audit = &AuditInfo{Time: at, Token: "write-token-1", Method: "PUT", Path: "/v1/checks/" + c.ID, Summary: summarize(cmd)}
				}
				idx++
				ne, err := applyCommand(cur, cmd, idx)
				if err != nil {
					b.Fatal(err)
				}
				cur = ne.s
			}
		})
	}
}
