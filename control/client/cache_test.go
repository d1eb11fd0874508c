package client

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// / history applies random writes of checks to a state and returns the states it went through
// with the delta between each and the next, as a voter's change feed sends them.
func history(t *testing.T, n int) ([]*state.State, []*state.Delta) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	doc := config.DefaultDocument()
	doc.Regions = []string{"a", "b", "c"}
	e, err := state.ApplyCommand(state.Empty(), &state.Command{Op: state.OpApplyDocument, Document: &doc}, 1)
	if err != nil {
		t.Fatal(err)
	}
	log := state.NewChangeLog(0)
	states := []*state.State{e.Next}
	var deltas []*state.Delta
	for i := uint64(2); len(states) < n; i++ {
		c := config.DefaultCheck()
		c.ID, c.Protocol, c.Target, c.Regions = fmt.Sprintf("c%d", rng.IntN(8)), config.ProtocolTCP, config.Target{Host: "127.0.0.1", Port: 1 + rng.IntN(3)}, doc.Regions
		cmd := &state.Command{Op: state.OpPutCheck, Check: &c}
		if rng.IntN(3) == 0 {
			cmd = &state.Command{Op: state.OpDeleteCheck, ID: c.ID}
		}
		prev := states[len(states)-1]
		e, err := state.ApplyCommand(prev, cmd, i)
		if err != nil {
			continue // a check deleted that is not there
		}
		log.Add(i, e.Keys())
		keys, _ := log.Since(prev.Index, i)
		deltas = append(deltas, e.Next.Delta(prev.Index, keys))
		states = append(states, e.Next)
	}
	return states, deltas
}

// TestDiskCopyJournal: each change is appended to the journal; the copy read back is the
// last state, through compactions; a record torn by a crash (cut anywhere) or damaged ends
// the journal, and the copy read back is the state before it, never a mixture.
func TestDiskCopyJournal(t *testing.T) {
	states, deltas := history(t, 120)
	path := filepath.Join(t.TempDir(), "config.json")
	c, s, err := openCopy(path)
	if err != nil || s != nil {
		t.Fatalf("empty copy: %v %v", s, err)
	}
	if err := c.save(states[0]); err != nil {
		t.Fatal(err)
	}
	for i, d := range deltas {
		if err := c.add(d, states[i+1]); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			got, err := LoadCache(path)
			if err != nil || jsonOf(t, got) != jsonOf(t, states[i+1]) {
				t.Fatalf("after change %d: copy differs (%v)", i, err)
			}
		}
	}
	c.close()

	// A crash in the middle of the last record: every cut of it reads back the state before.
	journal, _ := os.ReadFile(journalPath(path))
	last := len(deltas) - 1
	for _, cut := range []int{1, 4, 8, 9, 50} {
		sizeBefore := recordStart(t, journal, last)
		if err := os.WriteFile(journalPath(path), journal[:sizeBefore+cut], 0o600); err != nil {
			t.Fatal(err)
		}
		c, got, err := openCopy(path)
		if err != nil || jsonOf(t, got) != jsonOf(t, states[last]) {
			t.Fatalf("cut %d bytes into the last record: %v", cut, err)
		}
		// The torn tail is cut off: the next change follows the good records.
		if err := c.add(deltas[last], states[last+1]); err != nil {
			t.Fatal(err)
		}
		c.close()
		if got, _ := LoadCache(path); jsonOf(t, got) != jsonOf(t, states[last+1]) {
			t.Fatalf("cut %d: the change after a torn record is lost", cut)
		}
	}
	// A damaged byte in a record ends the journal there.
	bad := append([]byte(nil), journal...)
	bad[recordStart(t, journal, last)+20] ^= 0xff
	os.WriteFile(journalPath(path), bad, 0o600)
	if got, _ := LoadCache(path); jsonOf(t, got) != jsonOf(t, states[last]) {
		t.Fatal("a damaged record was applied")
	}
}

// recordStart returns the offset of journal record n.
func recordStart(t *testing.T, journal []byte, n int) int {
	t.Helper()
	off := 0
	for range n {
		if off+8 > len(journal) {
			t.Fatalf("journal of %d bytes has fewer than %d records", len(journal), n)
		}
		off += 8 + int(uint32(journal[off])<<24|uint32(journal[off+1])<<16|uint32(journal[off+2])<<8|uint32(journal[off+3]))
	}
	return off
}

// TestDiskCopyCompacts: once the journal outgrows the base, the next change writes a new
// base and empties the journal, and the copy still reads back the last state.
func TestDiskCopyCompacts(t *testing.T) {
	states, deltas := history(t, 40)
	path := filepath.Join(t.TempDir(), "config.json")
	c, _, err := openCopy(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.save(states[0]); err != nil {
		t.Fatal(err)
	}
	c.jsize = minCompact + 1 // as if the journal had grown past the base
	if err := c.add(deltas[0], states[1]); err != nil {
		t.Fatal(err)
	}
	if c.jsize != 0 {
		t.Fatalf("journal of %d bytes after a compaction", c.jsize)
	}
	if fi, err := os.Stat(journalPath(path)); err != nil || fi.Size() != 0 {
		t.Fatalf("journal after a compaction: %v %v", fi, err)
	}
	for i, d := range deltas[1:] {
		if err := c.add(d, states[i+2]); err != nil {
			t.Fatal(err)
		}
	}
	c.close()
	if got, err := LoadCache(path); err != nil || jsonOf(t, got) != jsonOf(t, states[len(states)-1]) {
		t.Fatalf("copy after compaction differs: %v", err)
	}
}

// jsonOf returns s's JSON, to compare two states.
func jsonOf(t *testing.T, s *state.State) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
