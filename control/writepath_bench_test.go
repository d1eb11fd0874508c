package control

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vigil-dns/vigil/control/state"
)

// BenchmarkWritePath times, in one process and without raft's I/O, each stage of one
// PUT /v1/checks/{id} as the voters run it on a state of 10,000 checks: the API's decoding
// of the body (decode-body-as-document: through the YAML decoder, as before the JSON path),
// the leader's validation before the commit, the command's encoding for the
// log, and one voter's apply of the committed entry (decoding included). Multiply the apply
// by three for the voters of a cluster. cpu-ns/op is the process's CPU time (collector
// included) per op: on a shared machine the figure to compare, where ns/op also counts the
// time the benchmark waited for a core.
func BenchmarkWritePath(b *testing.B) {
	doc, err := decodeDocument([]byte(scaleJSON(10000)))
	if err != nil {
		b.Fatal(err)
	}
	base := state.NewState(doc)
	body := []byte(`{"protocol": "tcp", "target": {"host": "127.0.0.1", "port": 4242}}`)
	c, err := decodeCheck(body)
	if err != nil {
		b.Fatal(err)
	}
	c.ID = "w-1"
	// As the API stamps it (a.stamp).
	cmd := &state.Command{Op: state.OpPutCheck, Check: c, Audit: &state.AuditInfo{Time: time.Now(), Token: "bench",
		Method: "PUT", Path: "/v1/checks/w-1", Summary: "put check w-1"}}
	b.Run("decode-body", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := decodeCheck(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-body-as-document", func(b *testing.B) { // the path before decodeCheckJSON
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := decodeCheckDocument(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate-before-commit", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := state.ApplyCommand(base, cmd, base.Index+1); err != nil {
				b.Fatal(err)
			}
		}
	})
	encodings := []struct {
		name   string
		encode func(*state.Command) ([]byte, error)
		batch  func([][]byte) []byte
	}{
		{"json", encodeCommand, func(subs [][]byte) []byte {
			bc := state.Command{Op: state.OpBatch}
			for _, s := range subs {
				bc.Batch = append(bc.Batch, s)
			}
			entry, _ := json.Marshal(bc)
			return entry
		}},
		{"binary", encodeCommandBinary, encodeBatchBinary},
	}
	for _, enc := range encodings {
		b.Run("encode-command/"+enc.name, func(b *testing.B) {
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := enc.encode(cmd); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, enc := range encodings {
		data, err := enc.encode(cmd)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{1, 16} {
			b.Run(fmt.Sprintf("apply/%s/batch=%d", enc.name, n), func(b *testing.B) {
				entry := data
				if n > 1 {
					subs := make([][]byte, n)
					for i := range subs {
						subs[i] = data
					}
					entry = enc.batch(subs)
				}
				f := NewFSM(nil, nil)
				f.publish(base)
				i := uint64(1)
				stop := reportCPU(b)
				for b.Loop() {
					f.publish(base)
					f.ApplyBatch([]*raft.Log{{Index: i, Type: raft.LogCommand, Data: entry}})
					i++
				}
				cpu := stop()
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/command")
			})
		}
	}
}

// reportCPU starts counting the process's CPU time; the function it returns reports it per
// op and returns the total.
func reportCPU(b *testing.B) func() time.Duration {
	start := processCPU()
	return func() time.Duration {
		d := processCPU() - start
		b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
		return d
	}
}

// processCPU returns the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
