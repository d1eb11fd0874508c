// Package delvtest asks BIND's delv for a name at a Vigil location and says whether it
// validated: the third opinion on DNSSEC answers. delv is a validating lookup tool written
// apart from miekg/dns and from unbound. delv asks the server it is given for every record it
// needs (the answer, DNSKEY and DS sets) and validates the chain itself from one zone's trust
// anchor. A test skips when delv is not installed (Debian package bind9-dnsutils; .ci/run
// installs it).
package delvtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Binary returns the path of the delv binary, or "" when it is not installed.
func Binary() string {
	if bin, err := exec.LookPath("delv"); err == nil {
		return bin
	}
	return ""
}

// Validator asks one location for one signed zone, trusting that zone's DS.
type Validator struct {
	bin, anchors, zone, host, port string
}

// New returns a validator of zone (absolute) asking the location at loc ("host:port"), with
// trust anchor ds (a DS record of zone in presentation form). It skips the test when delv
// is not installed.
func New(t testing.TB, zone, loc, ds string) *Validator {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip("delv is not installed (apt-get install -y bind9-dnsutils)")
	}
	rr, err := dns.NewRR(ds)
	if err != nil {
		t.Fatalf("delvtest: trust anchor %q: %v", ds, err)
	}
	d, ok := rr.(*dns.DS)
	if !ok {
		t.Fatalf("delvtest: trust anchor %q is not a DS record", ds)
	}
	host, port, err := net.SplitHostPort(loc)
	if err != nil {
		t.Fatalf("delvtest: location %q: %v", loc, err)
	}
	path := filepath.Join(t.TempDir(), "anchors.conf")
	conf := fmt.Sprintf("trust-anchors {\n\t%q static-ds %d %d %d %q;\n};\n", dns.Fqdn(zone), d.KeyTag, d.Algorithm, d.DigestType, d.Digest)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Validator{bin: bin, anchors: path, zone: dns.Fqdn(zone), host: host, port: port}
}

// Result is what delv said of one question.
type Result struct {
	// Validated says delv printed "fully validated": every record of the answer was proved
	// from the trust anchor, a denial included.
	Validated bool
	// Output is delv's output, for messages.
	Output string
}

// Ask asks delv for name and qtype, over TCP when tcp is set.
func (v *Validator) Ask(t testing.TB, name string, qtype uint16, tcp bool) Result {
	t.Helper()
	args := []string{"-a", v.anchors, "+root=" + v.zone, "@" + v.host, "-p", v.port,
		"-q", dns.Fqdn(name), "-t", dns.TypeToString[qtype]}
	if tcp {
		args = append(args, "+tcp")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, v.bin, args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("delvtest: delv %s: no result within 20s:\n%s", strings.Join(args, " "), out)
	}
	// delv exits non-zero when resolution or validation fails: that is a result, not an error.
	_ = err
	s := string(out)
	return Result{Validated: strings.Contains(s, "fully validated"), Output: s}
}

// Secure fails the test unless delv validated the answer to name and qtype.
func (v *Validator) Secure(t testing.TB, what, name string, qtype uint16, tcp bool) Result {
	t.Helper()
	r := v.Ask(t, name, qtype, tcp)
	if !r.Validated {
		t.Fatalf("%s: delv did not validate %s %s (tcp %v):\n%s", what, name, dns.TypeToString[qtype], tcp, r.Output)
	}
	return r
}
