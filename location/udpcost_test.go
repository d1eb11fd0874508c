package location

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkUDPCost runs dnsperf (10 clients, 100 queries outstanding, no EDNS) against a
// server in this process for a health-aware failover name, and reports what a query costs
// the process: user and system CPU time (getrusage, which leaves dnsperf out) per query, and
// queries per CPU-second; with the answer cache and without, with one UDP socket and with one
// per core (SO_REUSEPORT). With -cpuprofile it shows where the user time goes.
// VIGIL_DNSPERF_SECONDS sets the length of each run (default 10). Run it alone:
// go test -run '^$' -bench UDPCost -benchtime 1x ./location/
func BenchmarkUDPCost(b *testing.B) {
	seconds := 10
	if v, err := strconv.Atoi(os.Getenv("VIGIL_DNSPERF_SECONDS")); err == nil && v > 0 {
		seconds = v
	}
	for _, c := range []struct {
		cache, sockets int
	}{{-1, 1}, {0, 1}, {-1, 0}, {0, 0}} {
		name := fmt.Sprintf("cache=%v/sockets=%d", c.cache >= 0, c.sockets)
		if c.sockets == 0 {
			name = fmt.Sprintf("cache=%v/sockets=cores", c.cache >= 0)
		}
		b.Run(name, func(b *testing.B) {
			s := startServer(b, Config{Registerer: prometheus.NewRegistry(), AnswerCache: c.cache, UDPSockets: c.sockets})
			s.SetVerdicts(map[string]bool{"p": false})
			var res dnsperfResult
			var user, sys time.Duration
			for range b.N {
				u0, s0 := rusage(b)
				res = runDNSPerf(b, s.Addr().String(), []string{"fo.example.test A"}, seconds, false, 0, false)
				u1, s1 := rusage(b)
				user, sys = user+u1-u0, sys+s1-s0
			}
			q := float64(res.completed) * float64(b.N)
			b.ReportMetric(res.qps, "qps")
			b.ReportMetric(float64(user.Nanoseconds())/q, "user-ns/query")
			b.ReportMetric(float64(sys.Nanoseconds())/q, "sys-ns/query")
			b.ReportMetric(q/(user+sys).Seconds(), "queries/CPU-s")
		})
	}
}

// rusage returns the user and system CPU time of this process so far.
func rusage(b *testing.B) (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
