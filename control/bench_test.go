package control

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/control/state"
)

// reportLatency adds writes per second and the p50 and p99 latencies to a benchmark.
func reportLatency(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "writes/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkWrite: one client writing checks one at a time to a 3-voter cluster (real raft
// over TCP, write-ahead logs synced): straight into the leader's Node.Apply (the commit itself),
// through the leader's HTTP API, and through a follower's API (forwarded to the leader).
func BenchmarkWrite(b *testing.B) {
	c := newCluster(b, 3)
	l := c.leader(5 * time.Second)
	f := c.follower()
	mustWrite(b, "PUT", l.url()+"/v1/document", "application/yaml", testDoc)
	run := func(b *testing.B, write func(i int)) {
		lat := make([]time.Duration, 0, b.N)
		start := time.Now()
		i := 0
		for b.Loop() {
			t0 := time.Now()
			write(i)
			lat = append(lat, time.Since(t0))
			i++
		}
		reportLatency(b, lat, time.Since(start))
	}
	b.Run("node-apply", func(b *testing.B) {
		run(b, func(i int) {
			ch := config.DefaultCheck()
			ch.ID, ch.Protocol, ch.Target = fmt.Sprintf("n-%d", i), config.ProtocolTCP, config.Target{Host: "127.0.0.1", Port: 1 + i%60000}
			if _, err := l.node.Apply(&state.Command{Op: state.OpPutCheck, Check: &ch}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("http-leader", func(b *testing.B) {
		run(b, func(i int) {
			mustWrite(b, "PUT", fmt.Sprintf("%s/v1/checks/l-%d", l.url(), i), "application/json", checkJSON(fmt.Sprintf("l-%d", i), 1+i%60000))
		})
	})
	b.Run("http-follower", func(b *testing.B) {
		run(b, func(i int) {
			mustWrite(b, "PUT", fmt.Sprintf("%s/v1/checks/f-%d", f.url(), i), "application/json", checkJSON(fmt.Sprintf("f-%d", i), 1+i%60000))
		})
	})
}

// BenchmarkApplyDocument: `vigil apply` of one document of 10,000 checks through the
// leader's API, validated and committed as one raft entry; compared with 100 checks. Raft
// runs with its default timeouts (as `vigil agent` does).
func BenchmarkApplyDocument(b *testing.B) {
	c := newClusterWith(b, 3, &cluster{maxBody: 64 << 20, timing: Timing{}})
	l := c.leader(5 * time.Second)
	for _, n := range []int{100, 10000} {
		var sb strings.Builder
		sb.WriteString("regions: [us-east, eu-west, sa-east]\nchecks:\n")
		for i := range n {
			fmt.Fprintf(&sb, "  - {id: c%d, protocol: tcp, target: {host: 127.0.0.1, port: %d}}\n", i, 1+i%60000)
		}
		doc := sb.String()
		b.Run(fmt.Sprintf("checks=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			start := time.Now()
			ops := 0
			for b.Loop() {
				// Alternate a port so that every apply is a real change.
				mustWrite(b, "PUT", l.url()+"/v1/document", "application/yaml", strings.Replace(doc, "port: 1}", fmt.Sprintf("port: %d}", 2+ops%2), 1))
				ops++
			}
			b.ReportMetric(float64(n*ops)/time.Since(start).Seconds(), "checks/s")
		})
	}
}

// BenchmarkLeaderFailover: the leader of 3 voters is stopped; the time until another voter
// is leader. With the tests' short raft timeouts and with raft's defaults (what `vigil agent`
// runs).
func BenchmarkLeaderFailover(b *testing.B) {
	for _, tc := range []struct {
		name   string
		timing Timing
	}{{"test-timing", testTiming}, {"default-timing", Timing{}}} {
		b.Run(tc.name, func(b *testing.B) {
			c := newClusterWith(b, 3, &cluster{maxBody: 1 << 20, timing: tc.timing})
			var total time.Duration
			n := 0
			for b.Loop() {
				l := c.leader(30 * time.Second)
				idx := slices.Index(c.voters, l)
				c.stop(idx)
				t0 := time.Now()
				c.leader(30 * time.Second)
				total += time.Since(t0)
				n++
				b.StopTimer()
				c.start(idx)
				waitFor(b, 30*time.Second, "the old leader to rejoin", func() bool {
					_, lid := c.voters[idx].node.Leader()
					return lid != ""
				})
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms/failover")
		})
	}
}

// BenchmarkWriteLoad: the load generator of `vigil load writes` against a 3-voter cluster in
// this process (raft over TCP, write-ahead logs synced, the HTTP API on real sockets), holding
// a document of 0 or 10,000 checks, with 1 and 16 concurrent clients writing checks through
// the leader's API. Each run lasts 3 s.
func BenchmarkWriteLoad(b *testing.B) {
	for _, held := range []int{0, 10000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			c := newClusterWith(b, 3, &cluster{maxBody: 64 << 20, timing: Timing{}})
			l := c.leader(5 * time.Second)
			if held > 0 {
				mustWrite(b, "PUT", l.url()+"/v1/document", "application/json", scaleJSON(held))
			}
			benchWriteLoad(b, l)
		})
	}
}

func benchWriteLoad(b *testing.B, l *voter) {
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			var res client.WriteLoadResult
			for b.Loop() {
				var err error
				res, err = client.RunWriteLoad(b.Context(), client.WriteLoad{Servers: []string{l.url()}, Token: testToken, Clients: clients, Duration: 3 * time.Second, Prefix: fmt.Sprintf("b%d", clients)})
				if err != nil || res.Errors > 0 {
					b.Fatalf("%v %s", err, res.FirstError)
				}
			}
			b.ReportMetric(res.PerSecond(), "writes/s")
			b.ReportMetric(float64(res.P50.Microseconds())/1000, "p50_ms")
			b.ReportMetric(float64(res.P99.Microseconds())/1000, "p99_ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// scaleJSON is a document of n tcp checks in three regions, as JSON.
func scaleJSON(n int) string {
	var sb strings.Builder
	sb.WriteString(`{"regions": ["us-east", "eu-west", "sa-east"], "checks": [`)
	for i := range n {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"id": "s%d", "protocol": "tcp", "target": {"host": "127.0.0.1", "port": %d}}`, i, 1+i%60000)
	}
	sb.WriteString("]}")
	return sb.String()
}
