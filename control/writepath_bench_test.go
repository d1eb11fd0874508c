package control

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// BenchmarkWritePath times, in one process and without raft's I/O, each stage of one
// PUT /v1/checks/{id} as the voters run it on a state of 10,000 checks: the API's decoding
// of the body, the leader's validation before the commit, the command's encoding for the
// log, and one voter's apply of the committed entry (decoding included). Multiply the apply
// by three for the voters of a cluster.
func BenchmarkWritePath(b *testing.B) {
	doc, err := decodeDocument([]byte(scaleJSON(10000)))
	if err != nil {
		b.Fatal(err)
	}
	base := NewState(doc)
	body := []byte(`{"protocol": "tcp", "target": {"host": "127.0.0.1", "port": 4242}}`)
	c, err := decodeCheck(body)
	if err != nil {
		b.Fatal(err)
	}
	c.ID = "w-1"
	cmd := &Command{Op: OpPutCheck, Check: c}
	data, err := json.Marshal(cmd)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode-body", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeCheck(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate-before-commit", func(b *testing.B) {
		for b.Loop() {
			if _, err := applyCommand(base, cmd, base.Index+1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode-command", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(cmd); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("apply/batch=%d", n), func(b *testing.B) {
			entry := data
			if n > 1 {
				bc := Command{Op: OpBatch}
				for range n {
					bc.Batch = append(bc.Batch, data)
				}
				entry, _ = json.Marshal(bc)
			}
			f := NewFSM(nil, nil)
			f.publish(base)
			i := uint64(1)
			for b.Loop() {
				f.publish(base)
				f.ApplyBatch([]*raft.Log{{Index: i, Type: raft.LogCommand, Data: entry}})
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/command")
		})
	}
}
