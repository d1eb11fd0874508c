package sim

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/lab/oracle"
)

// A process that is not stopped but starved (its threads wait for a CPU many times as long
// as they run) loses no single stretch the stall monitor counts, yet a probe's round trip
// can outlast its timeout: the checkers of every region then fail a healthy target at the
// same instant. The control probe measures this in the same run: an HTTP round trip over
// loopback to a server in the harness's own process, which no fault touches, every
// controlEvery. One that takes the shortest probe timeout of the document or longer is
// recorded as a stall from its start to its end: for that long the process could not have
// finished a probe in time.
const controlEvery = 100 * time.Millisecond

// controlProbe runs the control probe until ctx ends, recording its slow round trips in m.
func (m *stallMonitor) controlProbe(ctx context.Context, timeout time.Duration) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return // no control: nothing is recorded, nothing excused
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	url := "http://" + ln.Addr().String() + "/"
	t := time.NewTicker(controlEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		} else if ctx.Err() != nil {
			return
		}
		if end := time.Now(); end.Sub(start) >= timeout {
			m.add(oracle.Stall{From: start, To: end})
		}
	}
}

// shortestTimeout returns the shortest probe timeout of doc's checks (the default's when
// none says).
func shortestTimeout(doc *config.Document) time.Duration {
	d := config.DefaultCheck().Timeout.Std()
	for _, c := range doc.Checks {
		if t := c.Timeout.Std(); t > 0 && t < d {
			d = t
		}
	}
	return d
}
