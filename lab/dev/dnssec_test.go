package dev

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
)

// TestDevSigned: the demo zone opted in to signing in the dev network: its voter generates
// the keys, sealed with the pool key, and every location signs its answers with them.
func TestDevSigned(t *testing.T) {
	n := startEdited(t, func(cfg *Config) {
		cfg.Document.Zones[0].DNSSEC = &config.DNSSEC{Enabled: true}
	})
	eventually(t, 30*time.Second, "every location signs www", func() (bool, string) {
		for _, r := range n.cfg.Regions {
			m := new(dns.Msg)
			m.SetQuestion("www.demo.vigil.test.", dns.TypeA)
			m.SetEdns0(1232, true)
			resp, err := dns.Exchange(m, n.DNSAddr(r))
			if err != nil {
				return false, r + ": " + err.Error()
			}
			signed := false
			for _, rr := range resp.Answer {
				if sig, ok := rr.(*dns.RRSIG); ok && sig.SignerName == "demo.vigil.test." {
					signed = true
				}
			}
			if !signed {
				return false, fmt.Sprintf("%s: %v", r, resp)
			}
		}
		return true, ""
	})
}
