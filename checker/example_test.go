package checker_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
)

// A single probe of an HTTP target, with the address policy of dev mode (loopback allowed).
func ExampleProber_Probe() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())

	check := config.DefaultCheck()
	check.ID, check.Protocol = "web", config.ProtocolHTTP
	check.Target = config.Target{Host: ap.Addr().String(), Port: int(ap.Port())}

	p := checker.NewProber(checker.ProberOptions{Addresses: checker.AddressPolicy{AllowLoopback: true}})
	r := p.Probe(context.Background(), &check)
	fmt.Println(r.Healthy, r.Reason, r.Message)
	// Output: false status status 503 (expected 200-399)
}

// The address policy refuses reserved ranges unless the operator allows them.
func ExampleAddressPolicy_Check() {
	policy := checker.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}
	for _, a := range []string{"93.184.215.14", "10.1.2.3", "10.9.9.9", "::ffff:127.0.0.1"} {
		err := policy.Check(netip.MustParseAddr(a))
		fmt.Println(a, strconv.Quote(fmt.Sprint(err)))
	}
	// Output:
	// 93.184.215.14 "<nil>"
	// 10.1.2.3 "<nil>"
	// 10.9.9.9 "checker: address 10.9.9.9 refused: private range (not in the allow-list)"
	// ::ffff:127.0.0.1 "checker: address ::ffff:127.0.0.1 refused: loopback range (not in the allow-list)"
}

// Wiring a checker: reports go to the gossip layer, self-health to the status API, metrics to
// the node's registry. Assignment changes call SetChecks again at any time.
func ExampleNew() {
	c, err := checker.New(checker.Options{
		Name:     "us-east-checker-1",
		Canaries: nil, // e.g. TCP checks of well-known anycast addresses
		OnReport: func(r checker.Report) {
			// hand r to gossip: it replaces this checker's row for r.CheckID when r.Seq is higher
		},
		OnSelf: func(s checker.SelfHealth) {
			// tell the status API; while !s.Healthy every report is withdrawn
		},
	})
	if err != nil {
		panic(err)
	}
	assigned := []config.Check{ /* this checker's shard of the checks */ }
	if err := c.SetChecks(assigned); err != nil {
		fmt.Println("some checks were rejected:", err) // the others are probed
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // in a node: cancelled at shutdown
	_ = c.Run(ctx)
}
