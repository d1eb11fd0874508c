package gossip

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestSeedNotYetListening: a node started before its seed listens (processes started
// together) joins it within seconds of the seed's start, over real sockets, not at the next
// rejoin interval (30 s here): a node alone after its first join asks its seeds again after
// 1 s, 2 s, 4 s, ...
func TestSeedNotYetListening(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a seed to start")
	}
	const rejoin = 30 * time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	start := func(id string, bindPort int, seeds []string) *Pool {
		cfg := Config{ID: id, Region: "us", Roles: RoleLocation, Version: "test",
			BindAddr: "127.0.0.1", BindPort: bindPort, Keys: [][]byte{testKey}, Profile: ProfileLocal,
			HeartbeatInterval: 200 * time.Millisecond, RejoinInterval: rejoin, Seeds: seeds,
			Registerer: prometheus.NewRegistry(), Logger: testLogger()}
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.Run(ctx); err != nil {
				t.Error(err)
			}
		}()
		return n
	}
	late := start("late-joiner", 0, []string{"127.0.0.1:" + strconv.Itoa(port)})
	// Its first join is refused; the seed starts after it.
	waitFor(t, 10*time.Second, 20*time.Millisecond, "the first join refused", func() bool {
		_, failed := late.LastJoinFailure()
		return failed
	})
	time.Sleep(1500 * time.Millisecond)
	seedStart := time.Now()
	seed := start("seed", port, nil)
	waitFor(t, rejoin/2, 50*time.Millisecond, "the node joins its seed once the seed listens", func() bool {
		return len(late.Members()) == 2 && len(seed.Members()) == 2
	})
	t.Logf("joined %v after the seed started (rejoin interval %v)", time.Since(seedStart).Round(10*time.Millisecond), rejoin)
}
