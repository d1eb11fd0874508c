package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// TestBatchCommandsSucceedAlone: the commands of a batch are applied in order, each on what
// the one before made, and one that fails leaves the others applied.
func TestBatchCommandsSucceedAlone(t *testing.T) {
	f := NewFSM(newSeqAllocator, nil)
	if err := applyLog(t, f, 1, &state.Command{Op: state.OpApplyDocument, Document: mustDoc(t, testDoc)}); err != nil {
		t.Fatal(err)
	}
	check := func(id string, port int) *config.Check {
		c := config.DefaultCheck()
		c.ID, c.Protocol, c.Target = id, config.ProtocolTCP, config.Target{Host: "127.0.0.1", Port: port}
		return &c
	}
	var batch state.Command
	batch.Op = state.OpBatch
	for _, c := range []*state.Command{
		{Op: state.OpPutCheck, Check: check("a", 1), Create: true},
		{Op: state.OpPutCheck, Check: check("a", 2), Create: true}, // exists by then
		{Op: state.OpDeleteCheck, ID: "web-1"},                     // still named by a record
		{Op: state.OpPutCheck, Check: check("b", 3)},
		{Op: state.OpBatch},
	} {
		raw, _ := json.Marshal(c)
		batch.Batch = append(batch.Batch, raw)
	}
	data, _ := json.Marshal(batch)
	res := f.Apply(&raft.Log{Index: 2, Data: data}).(ApplyResult)
	if res.Err != nil || len(res.Batch) != 5 {
		t.Fatalf("batch result %+v", res)
	}
	var ve *state.ValidationError
	if res.Batch[0] != nil || !errors.Is(res.Batch[1], state.ErrConflict) || !errors.As(res.Batch[2], &ve) || res.Batch[3] != nil || res.Batch[4] == nil {
		t.Fatalf("batch errors %v", res.Batch)
	}
	s := f.State()
	a, _ := s.Check("a")
	if _, ok := s.Check("b"); !ok || a.Target.Port != 1 || s.Index != 2 {
		t.Fatalf("state after the batch: index %d, a %+v", s.Index, a.Target)
	}
	if _, ok := s.Check("web-1"); !ok {
		t.Fatal("the failed delete was applied")
	}
}

// TestConcurrentWritesCommitted: many clients writing at once through the API of a 3-voter
// cluster, some creating the same check: every write answered 2xx is in the state of every
// voter, and of the competing creates exactly one succeeded.
func TestConcurrentWritesCommitted(t *testing.T) {
	c := newCluster(t, 3)
	l := c.leader(5 * time.Second)
	mustWrite(t, "PUT", l.url()+"/v1/document", "application/yaml", testDoc)
	var mu sync.Mutex
	var ok []string
	created := 0
	var wg sync.WaitGroup
	for g := range 24 {
		wg.Go(func() {
			for i := range 10 {
				id := fmt.Sprintf("g%d-%d", g, i)
				code, _ := do(t, "PUT", l.url()+"/v1/checks/"+id, testToken, "application/json", checkJSON(id, 1+i))
				mu.Lock()
				if code == http.StatusOK {
					ok = append(ok, id)
				}
				mu.Unlock()
			}
			code, _ := do(t, "POST", l.url()+"/v1/checks", testToken, "application/json", checkJSON("contested", 9))
			mu.Lock()
			if code == http.StatusCreated {
				created++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(ok) != 240 || created != 1 {
		t.Fatalf("%d of 240 writes answered OK, %d contested creates succeeded", len(ok), created)
	}
	last := l.node.State().Index
	for _, v := range c.voters {
		waitFor(t, 5*time.Second, "every voter to apply the writes", func() bool { return v.node.State().Index >= last })
		for _, id := range ok {
			if _, found := v.node.State().Check(id); !found {
				t.Fatalf("voter %s lacks acknowledged check %s", v.id, id)
			}
		}
	}
}

// TestBatchCommandsSplit: the state machine's reading of a batch entry, without decoding it
// as a whole, gives the commands that decoding it as a whole gives, for commands whose
// strings hold the characters that delimit JSON; an entry framed otherwise is left to the
// whole decoding.
func TestBatchCommandsSplit(t *testing.T) {
	odd := `a"b\c{d}[e],f\"`
	var cmds []json.RawMessage
	for _, c := range []state.Command{
		{Op: state.OpPutCheck, Check: &config.Check{ID: odd, Children: []string{"x", "]", "}"}}},
		{Op: state.OpDeleteCheck, ID: `\\`},
		{Op: state.OpDeleteRecordSet, ZoneName: "z,", Name: `"`, Type: "A"},
	} {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, b)
	}
	for n := 1; n <= len(cmds); n++ {
		entry, err := json.Marshal(state.Command{Op: state.OpBatch, Batch: cmds[:n]})
		if err != nil {
			t.Fatal(err)
		}
		seq, ok := batchCommands(entry)
		if !ok {
			t.Fatalf("%s: not read as a batch", entry)
		}
		var whole state.Command
		if err := json.Unmarshal(entry, &whole); err != nil {
			t.Fatal(err)
		}
		got := slices.Collect(seq)
		if len(got) != len(whole.Batch) {
			t.Fatalf("%s: %d commands, want %d", entry, len(got), len(whole.Batch))
		}
		for i := range got {
			if !bytes.Equal(got[i], whole.Batch[i]) {
				t.Errorf("command %d: %s, want %s", i, got[i], whole.Batch[i])
			}
		}
	}
	for _, entry := range []string{
		`{"op":"batch","batch":[]}`,
		`{"op":"batch","batch":[1],"op":"put_check","x":[2]}`,
		`{"op":"batch","batch":[{"op":"delete_check","id":"a"}]}x]}`,
		`{"op":"batch","batch":[{"op":"delete_check","id":"a}]}`,
		`{"op":"put_check","batch":[{}]}`,
	} {
		if _, ok := batchCommands([]byte(entry)); ok {
			t.Errorf("%s: read as a batch of the committer's framing", entry)
		}
	}
}

// TestLingerWaitsForWrites: a write that takes the turn from a batch of several waits until
// as many writes wait as were in play, and no longer (here the longest wait is an hour);
// a lone writer (a batch of one before it) does not wait at all.
func TestLingerWaitsForWrites(t *testing.T) {
	c := &committer{lingerFor: time.Hour}
	done := make(chan struct{})
	go func() {
		c.linger(1)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a write after a batch of one waited")
	}
	c.queue = []*pendingWrite{{}}
	done = make(chan struct{})
	go func() {
		c.linger(3)
		close(done)
	}()
	enqueue := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.enqueue(&pendingWrite{})
	}
	waitFor(t, 10*time.Second, "the write to start waiting", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.full != nil
	})
	enqueue()
	select {
	case <-done:
		t.Fatal("the wait ended with 2 of 3 writes waiting")
	case <-time.After(50 * time.Millisecond):
	}
	enqueue()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end when 3 writes were waiting")
	}
}
