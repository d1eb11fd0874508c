package delvtest

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Query is Ask for any goroutine: it asks delv for name and qtype (over TCP when tcp is set)
// and returns an error, instead of failing the test, when delv gives no result within 20s.
func (v *Validator) Query(name string, qtype uint16, tcp bool) (Result, error) {
	args := []string{"-a", v.anchors, "+root=" + v.zone, "@" + v.host, "-p", v.port,
		"-q", dns.Fqdn(name), "-t", dns.TypeToString[qtype]}
	if tcp {
		args = append(args, "+tcp")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, v.bin, args...).CombinedOutput()
	if ctx.Err() != nil {
		return Result{Output: string(out)}, fmt.Errorf("delvtest: delv %s: no result within 20s: %w", strings.Join(args, " "), ctx.Err())
	}
	// delv exits non-zero when resolution or validation fails: that is a result, not an error.
	_ = err
	s := string(out)
	return Result{Validated: strings.Contains(s, "fully validated"), Output: s}, nil
}
