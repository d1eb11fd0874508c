package checker

import (
	"context"

	"github.com/vigil-dns/vigil/config"
)

// probeTCP is healthy when a TCP connection to the target opens within the timeout.
func (p *Prober) probeTCP(ctx context.Context, c *config.Check, res *Result) {
	conn, err := p.dial(ctx, "tcp", c.Target.Host, c.Target.Port, c.IPVersion, res)
	if err != nil {
		res.fail(classify(err))
		return
	}
	_ = conn.Close() // the probe has its answer; a failed close changes nothing
	res.Healthy, res.Reason, res.Message = true, ReasonOK, "connected"
	res.Protocol = "tcp"
}
