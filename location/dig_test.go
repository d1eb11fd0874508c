package location

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// dig runs Debian's dig against the server with args and returns its output.
func dig(t *testing.T, s *Server, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("dig")
	if err != nil {
		t.Skip("dig is not installed (Debian package dnsutils; .ci/run installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	base := []string{"@" + s.Addr().Addr().String(), "-p", strconv.Itoa(int(s.Addr().Port())), "+tries=2", "+time=2"}
	out, err := exec.CommandContext(ctx, path, append(base, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("dig %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestDig asks the server with dig, as an operator would: an authoritative answer, a
// negative one, EDNS0, and a truncated answer that dig retries over TCP by itself.
func TestDig(t *testing.T) {
	s := startServer(t, Config{})
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"www.example.test", "A", "+norec"}, []string{"status: NOERROR", "flags: qr aa;", "www.example.test.\t60\tIN\tA\t192.0.2.1", "udp: 1232"}},
		{[]string{"nope.example.test", "A"}, []string{"status: NXDOMAIN", "flags: qr aa rd;", "example.test.\t\t120\tIN\tSOA"}},
		{[]string{"www.example.org", "A"}, []string{"status: REFUSED"}},
		{[]string{"+noedns", "example.test", "NS"}, []string{"status: NOERROR", "ANSWER: 4,", "ns-4.ns.vigil.test."}},
		{[]string{"big.example.test", "TXT"}, []string{"Truncated, retrying in TCP mode", "status: NOERROR", "ANSWER: 10,"}},
		{[]string{"+edns=1", "+noednsneg", "www.example.test", "A"}, []string{"status: BADVERS"}},
		{[]string{"WwW.ExAmPlE.TeSt", "A"}, []string{";WwW.ExAmPlE.TeSt.\t\tIN\tA", "192.0.2.1"}},
	} {
		out := dig(t, s, c.args...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("dig %v: no %q in\n%s", c.args, w, out)
			}
		}
	}
}
