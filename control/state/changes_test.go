package state

import (
	"testing"
)

// TestChangeLogBounded: the log holds at most its size; a reader it no longer reaches back
// to, or one before a change larger than the log, is told to take the whole state.
func TestChangeLogBounded(t *testing.T) {
	l := NewChangeLog(10)
	for i := uint64(1); i <= 100; i++ {
		l.Add(i, []string{"cx", "cy"})
	}
	if n := len(l.ents) - l.head; n > 10 {
		t.Fatalf("log holds %d entries, at most 10", n)
	}
	if len(l.ents) > 20 {
		t.Fatalf("log keeps %d dropped entries", len(l.ents))
	}
	if c := l.Changes(96, 100); c.Full || len(c.Checks) != 2 {
		t.Fatalf("recent reader: %+v", c)
	}
	if c := l.Changes(90, 100); !c.Full {
		t.Fatalf("reader behind the log: %+v", c)
	}
	l.Add(101, []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10", "c11"})
	if c := l.Changes(100, 101); !c.Full {
		t.Fatalf("reader before an oversized change: %+v", c)
	}
	l.Add(102, []string{"za."})
	if c := l.Changes(101, 102); c.Full || len(c.Zones) != 1 || c.Zones[0] != "a." {
		t.Fatalf("reader after an oversized change: %+v", c)
	}
}
