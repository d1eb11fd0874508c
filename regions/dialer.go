package regions

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"
)

// synRetransmit is how long a TCP client waits before it sends a lost SYN again.
const synRetransmit = time.Second

// PlaceTarget records that the endpoint at address (host:port) is in region, so that probes
// from other regions cross the link between them. Addresses never placed are reached
// directly, as if from everywhere.
func (n *Network) PlaceTarget(address, region string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.known(region); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(address); err != nil {
		return fmt.Errorf("regions: target address %q: %w", address, err)
	}
	n.targets[address] = region
	return nil
}

// targetRegion returns the region of a placed target, or "".
func (n *Network) targetRegion(address string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.targets[address]
}

// Dialer dials probe targets from one region over the simulated links, then over the real
// loopback network: a cut link is a black hole until the context or Timeout ends, a lossy
// link loses SYNs (each one costs a one-second retransmission, three lost in a row fail the
// dial), and latency delays the handshake.
type Dialer struct {
	net    *Network
	region string
	// Timeout bounds a dial when the context has no deadline. Default 10s.
	Timeout time.Duration
	// Dialer makes the real connection once the simulated link lets it through.
	Dialer net.Dialer
}

// Dialer returns a probe dialer for checkers in region.
func (n *Network) Dialer(region string) (*Dialer, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.known(region); err != nil {
		return nil, err
	}
	return &Dialer{net: n, region: region, Timeout: 10 * time.Second}, nil
}

// DialContext connects to address as a checker of the dialer's region would; its signature is
// net.Dialer's, so it fits http.Transport.DialContext.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if _, ok := ctx.Deadline(); !ok && d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	if to := d.net.targetRegion(address); to != "" {
		if err := d.handshake(ctx, to); err != nil {
			return nil, fmt.Errorf("regions: dial %s from %s: %w", address, d.region, err)
		}
	}
	return d.Dialer.DialContext(ctx, network, address)
}

// handshake waits as the simulated links between the dialer's region and to require.
func (d *Dialer) handshake(ctx context.Context, to string) error {
	for attempt := 0; attempt < 3; attempt++ {
		ok, rtt := d.net.connect(d.region, to)
		if !ok {
			<-ctx.Done()
			return fmt.Errorf("link cut: %w", os.ErrDeadlineExceeded)
		}
		there, _ := d.net.packet(d.region, to)
		back, _ := d.net.packet(to, d.region)
		wait := rtt
		if !there || !back {
			wait = synRetransmit
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		if there && back {
			return nil
		}
	}
	return fmt.Errorf("three SYNs lost: %w", os.ErrDeadlineExceeded)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w", ctx.Err())
	}
}
