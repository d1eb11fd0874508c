package oracle

import (
	"errors"
	"testing"
)

func TestWriteLedger(t *testing.T) {
	l := NewWriteLedger()
	l.Acked(Write{Key: "k0", Value: 1, Index: 10})
	l.Acked(Write{Key: "k1", Value: 2, Index: 11})
	l.Failed("k2", 3)
	l.Acked(Write{Key: "k3", Value: 4, Index: 13})
	if !l.Pending("k0") || l.Pending("k2") || l.Unchecked() != 3 {
		t.Fatalf("pending k0 %v, k2 %v, unchecked %d: want k0 pending, k2 not (it failed), 3 unchecked", l.Pending("k0"), l.Pending("k2"), l.Unchecked())
	}
	l.Check(ReadBack{Index: 13, Values: map[string]int{"k0": 1, "k1": 2, "k2": 3, "k3": 4}})
	if s := l.Stats(); !s.OK() || s.Checked != 3 || s.Lost != 0 || s.Attempted != 4 || s.Failed != 1 || l.Pending("k0") {
		t.Fatalf("every write read back: %+v", s)
	}
	// The key is written again: a later value, then a failed write that lands late.
	l.Acked(Write{Key: "k0", Value: 5, Index: 20})
	l.Failed("k0", 6)
	l.Acked(Write{Key: "k1", Value: 7, Index: 22})
	l.Check(ReadBack{Index: 25, Values: map[string]int{"k0": 6, "k1": 7}})
	if s := l.Stats(); !s.OK() || s.Checked != 4 || s.Overwritten != 1 {
		t.Fatalf("a failed write applied late: %+v", s)
	}
}

// An acknowledged write missing from a read-back is lost, and so is one whose key holds an
// older value; a read that does not include an acknowledged index is a violation itself;
// a write no read reached is unchecked. Each fails.
func TestWriteLedgerCatchesLosses(t *testing.T) {
	l := NewWriteLedger()
	l.Acked(Write{Key: "k0", Value: 1, Index: 10})
	l.Acked(Write{Key: "k1", Value: 2, Index: 11})
	l.Acked(Write{Key: "k2", Value: 3, Index: 12})
	l.Check(ReadBack{Index: 12, Values: map[string]int{"k0": 1}})
	if s := l.Stats(); s.OK() || s.Lost != 2 || s.Checked != 1 || len(s.Problems) != 2 {
		t.Fatalf("two writes missing: %+v", s)
	}
	l = NewWriteLedger()
	l.Acked(Write{Key: "k0", Value: 1, Index: 10})
	l.Acked(Write{Key: "k0", Value: 9, Index: 15})
	l.Check(ReadBack{Index: 14, Values: map[string]int{"k0": 1}})
	if s := l.Stats(); s.OK() || s.StaleReads != 1 || s.Checked != 1 || s.Unchecked != 1 {
		t.Fatalf("a read behind an acknowledged index: %+v", s)
	}
	l.ReadFailed(errors.New("no leader"))
	if s := l.Stats(); s.OK() || s.ReadBack == "" {
		t.Fatalf("the last read failed: %+v", s)
	}
}
