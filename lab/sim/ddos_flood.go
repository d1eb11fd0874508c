package sim

// The ddos scenario's query flood: UDP queries in batches at a steady rate from a loopback
// network of its own.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
)

// floodBatch is how many queries a flood sender writes with one system call.
const floodBatch = 16

// flood sends queries for name to each address at rate a second, split over senders
// goroutines per address, until end; sent counts them. The count is bounded by rate times
// the time to end (plus one batch per sender).
func flood(ctx context.Context, addrs []string, name string, rate, senders int, end time.Time, sent *atomic.Int64) error {
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	wire, err := q.Pack()
	if err != nil {
		return fmt.Errorf("sim: flood: %w", err)
	}
	per := float64(rate) / float64(senders)
	var wg sync.WaitGroup
	errs := make(chan error, len(addrs)*senders)
	for _, addr := range addrs {
		raddr, err := net.ResolveUDPAddr("udp", addr)
		if err != nil {
			return fmt.Errorf("sim: flood: %w", err)
		}
		for range senders {
			// The flood comes from its own loopback network, apart from the probes'.
			c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 66, 0, 1)}, raddr)
			if err != nil {
				errs <- fmt.Errorf("sim: flood: %w", err)
				continue
			}
			wg.Go(func() {
				defer c.Close()
				pc := ipv4.NewPacketConn(c)
				ms := make([]ipv4.Message, floodBatch)
				for i := range ms {
					ms[i].Buffers = [][]byte{wire}
				}
				start := time.Now()
				var n int64
				for ctx.Err() == nil {
					now := time.Now()
					if !now.Before(end) {
						return
					}
					due := int64(now.Sub(start).Seconds()*per) - n
					if due <= 0 {
						time.Sleep(200 * time.Microsecond)
						continue
					}
					k, err := pc.WriteBatch(ms[:min(due, floodBatch)], 0)
					if err != nil {
						// A flood does not care whether a datagram was refused; count it sent.
						k = max(k, 1)
					}
					n += int64(k)
					sent.Add(int64(k))
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}
