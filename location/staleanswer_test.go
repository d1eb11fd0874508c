package location

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/dnssec"
)

// TestNoStaleAnswerAfterVerdictChange flips the verdicts of a failover primary and a
// multivalue member, alternately through SetVerdicts and PatchVerdicts (the two ways a
// location installs verdicts), and checks that the first query sent after the install
// returns, on a connection opened before the flips, already gets the new answer: over UDP and
// TCP, without EDNS, with EDNS and with the DO bit, unsigned and signed (then the answer's
// signature must verify, so that a signature kept from the old answer fails). Meanwhile
// another client asks the same names without pause, so that an answer cached by a query in
// flight during the change would be served stale.
func TestNoStaleAnswerAfterVerdictChange(t *testing.T) {
	const flips = 20
	for _, signed := range []bool{false, true} {
		s := startServer(t, Config{})
		var keys []dns.RR
		if signed {
			sg := testSigner(t, dnssec.SchemeCombined)
			s.SetSigners(map[string]*dnssec.Signer{"example.test.": sg})
			keys = sg.AppendDNSKEYs(nil, time.Now())
		}
		addr := s.Addr()
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &dns.Client{Timeout: time.Second}
			for ctx.Err() == nil {
				for _, name := range []string{"fo.example.test.", "mv.example.test."} {
					m := query(name, dns.TypeA, 1232)
					m.SetEdns0(1232, signed)
					_, _, _ = c.Exchange(m, addr.String())
				}
			}
		}()
		for _, network := range []string{"udp", "tcp"} {
			for _, mode := range []string{"no EDNS", "EDNS", "DO"} {
				if !signed && mode == "DO" {
					continue
				}
				name := fmt.Sprintf("%s, %s, signed %v", network, mode, signed)
				t.Run(name, func(t *testing.T) {
					c := &dns.Client{Net: network, Timeout: 2 * time.Second, UDPSize: 65535}
					conn, err := c.Dial(addr.String())
					if err != nil {
						t.Fatal(err)
					}
					defer conn.Close()
					ask := func(qname string) *dns.Msg {
						t.Helper()
						m := query(qname, dns.TypeA, 0)
						switch mode {
						case "EDNS":
							m.SetEdns0(1232, false)
						case "DO":
							m.SetEdns0(1232, true)
						}
						r, _, err := c.ExchangeWithConn(m, conn)
						if err != nil {
							t.Fatalf("%s: %v", qname, err)
						}
						return r
					}
					for i := range flips {
						down := i%2 == 0
						if i%4 < 2 {
							s.SetVerdicts(map[string]bool{"p": !down, "m2": !down})
						} else {
							s.PatchVerdicts([]VerdictChange{{Check: "p", Healthy: !down}, {Check: "m2", Healthy: !down}})
						}
						if s.Served("p") == down || s.Served("m2") == down {
							t.Fatalf("flip %d: the location reports p served %v, m2 %v after the install, want %v", i, s.Served("p"), s.Served("m2"), !down)
						}
						wantFO := []string{"192.0.2.10"}
						wantMV := []string{"192.0.2.30", "192.0.2.31", "192.0.2.32"}
						if down {
							wantFO, wantMV = []string{"192.0.2.11"}, []string{"192.0.2.30", "192.0.2.32"}
						}
						fo := ask("fo.example.test.")
						if got := addrs(fo); !slices.Equal(got, wantFO) {
							t.Fatalf("flip %d (primary down %v): fo answers %v, want %v", i, down, got, wantFO)
						}
						mv := ask("mv.example.test.")
						got := addrs(mv)
						slices.Sort(got)
						if !slices.Equal(got, wantMV) {
							t.Fatalf("flip %d (m2 down %v): mv answers %v, want %v", i, down, got, wantMV)
						}
						if mode == "DO" {
							for _, r := range []*dns.Msg{fo, mv} {
								if types := verifySection(t, keys, r.Answer); !slices.Equal(types, []uint16{dns.TypeA}) {
									t.Fatalf("flip %d: signed answer's record sets %v, want one A set with its signature", i, types)
								}
							}
						}
					}
				})
			}
		}
		stop()
		wg.Wait()
	}
}

// addrs returns the addresses of the answer section's A records, in order.
func addrs(r *dns.Msg) []string {
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	return out
}
