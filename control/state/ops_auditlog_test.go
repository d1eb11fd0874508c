package state

import (
	"testing"
)

// TestAuditLogQueue: pushes and pops across block boundaries keep the entries in order, and
// an older version is unchanged by what a newer one does.
func TestAuditLogQueue(t *testing.T) {
	var l auditLog
	var versions []auditLog
	for i := 1; i <= 3*auditChunk+5; i++ {
		l = l.push(&AuditEntry{Seq: uint64(i)})
		if i%7 == 0 {
			l = l.pop()
		}
		versions = append(versions, l)
	}
	check := func(l auditLog, last int) {
		t.Helper()
		n := l.Len()
		for i := range n {
			if got, want := l.at(i).Seq, uint64(last-n+1+i); got != want {
				t.Fatalf("entry %d of %d: seq %d, want %d", i, n, got, want)
			}
		}
	}
	for i, v := range versions {
		check(v, i+1)
	}
	if n := versions[len(versions)-1].Len(); n != 3*auditChunk+5-(3*auditChunk+5)/7 {
		t.Fatalf("len %d", n)
	}
	for l.Len() > 0 {
		l = l.pop()
	}
	check(versions[100], 101)
}
