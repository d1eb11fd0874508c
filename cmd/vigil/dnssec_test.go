package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestDNSSECCommands: with a real voter that holds a DNSSEC secret, a zone that opts in to
// signing gets keys; `vigil dnssec ds` prints the DS of its key-signing key, `keys` lists
// both keys, `rollover` starts a ZSK rollover and refuses a second one.
func TestDNSSECCommands(t *testing.T) {
	dir := t.TempDir()
	url, node := sealedVoter(t, dir)
	vigil := func(args ...string) (int, string, string) { return runCLI(t, args...) }
	doc := filepath.Join(dir, "signed.yaml")
	if err := os.WriteFile(doc, []byte(`regions: [us-east, eu-west, sa-east]
zones:
  - name: signed.test
    dnssec: {enabled: true, keys: split}
    name_servers: [ns1.example.net.]
    record_sets:
      - {name: www, type: A, records: [{value: 192.0.2.1}]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := vigil("apply", "-f", doc, "-server", url); code != 0 {
		t.Fatalf("apply: %s", errOut)
	}
	var out string
	deadline := time.Now().Add(10 * time.Second)
	for {
		var code int
		code, out, _ = vigil("dnssec", "ds", "signed.test", "-server", url)
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no DS within 10s: %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rr, err := dns.NewRR(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("ds prints %q: %v", out, err)
	}
	if ds, ok := rr.(*dns.DS); !ok || ds.Algorithm != dns.ECDSAP256SHA256 || ds.DigestType != dns.SHA256 || ds.Hdr.Name != "signed.test." {
		t.Fatalf("ds: %v", rr)
	}
	code, out, errOut := vigil("dnssec", "keys", "signed.test", "-server", url)
	if code != 0 || strings.Count(out, " active ") != 2 || !strings.Contains(out, " ksk ") || !strings.Contains(out, " zsk ") {
		t.Fatalf("keys: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := vigil("dnssec", "rollover", "signed.test", "-role", "zsk", "-server", url); code != 0 {
		t.Fatalf("rollover: %s %s", out, errOut)
	}
	if code, _, errOut := vigil("dnssec", "rollover", "signed.test", "-role", "zsk", "-server", url); code == 0 || !strings.Contains(errOut, "in progress") {
		t.Fatalf("second rollover: %d %s", code, errOut)
	}
	if _, out, _ := vigil("dnssec", "keys", "signed.test", "-server", url); !strings.Contains(out, " published ") || !strings.Contains(out, "retires") {
		t.Fatalf("keys after the rollover: %s", out)
	}

	// A KSK rollover: -finish at once is refused (409, saying from when), -force without
	// -finish is a usage error, -finish -force ends it, and the audit log records each phase.
	if code, out, errOut := vigil("dnssec", "rollover", "signed.test", "-role", "ksk", "-server", url); code != 0 {
		t.Fatalf("ksk rollover: %s %s", out, errOut)
	}
	if _, out, _ := vigil("dnssec", "keys", "signed.test", "-server", url); !strings.Contains(out, "rollover may finish from") {
		t.Fatalf("keys during a ksk rollover do not say when it may finish: %s", out)
	}
	if code, _, errOut := vigil("dnssec", "rollover", "signed.test", "-role", "ksk", "-finish", "-server", url); code == 0 || !strings.Contains(errOut, "HTTP 409") || !strings.Contains(errOut, "may be finished from") || !strings.Contains(errOut, "-force") {
		t.Fatalf("finish right after the start: %d %s", code, errOut)
	}
	if code, _, errOut := vigil("dnssec", "rollover", "signed.test", "-role", "ksk", "-force", "-server", url); code != 2 || !strings.Contains(errOut, "-finish only") {
		t.Fatalf("-force without -finish: %d %s", code, errOut)
	}
	if code, out, errOut := vigil("dnssec", "rollover", "signed.test", "-role", "ksk", "-finish", "-force", "-server", url); code != 0 {
		t.Fatalf("forced finish: %s %s", out, errOut)
	}
	var phases []string
	for _, e := range node.State().Audit(0, 0) {
		if strings.HasPrefix(e.Summary, "dnssec rollover") {
			phases = append(phases, e.Token+": "+e.Summary)
		}
	}
	if len(phases) != 3 || !strings.Contains(phases[0], "start zsk of signed.test.") || !strings.Contains(phases[1], "start ksk") ||
		!strings.Contains(phases[2], "finish ksk") || !strings.Contains(phases[2], "forced") || !strings.HasPrefix(phases[2], "write-token-1: ") {
		t.Fatalf("the audit log's rollovers: %q", phases)
	}
}
