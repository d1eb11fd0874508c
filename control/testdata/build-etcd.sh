#!/bin/sh
# Builds the peer of the control-plane write benchmark: etcd's server (etcd's own main,
# etcdmain.Main, from the Go module proxy) and a load generator that writes to etcd as
# `vigil load writes` writes to Vigil (closed-loop clients, the same keys and bodies), into
# OUTDIR as etcd-server and etcd-load. bench-writes.sh runs them when named etcd:OUTDIR.
#
# usage: sh control/testdata/build-etcd.sh OUTDIR [ETCD_VERSION]   (default v3.6.13)
set -eu
[ $# -ge 1 ] || { sed -n 2,7p "$0"; exit 2; }
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
VERSION=${2:-v3.6.13}
SRC=$(mktemp -d /tmp/etcd-build.XXXXXX)
trap 'rm -rf "$SRC"' EXIT INT TERM
mkdir "$SRC/server" "$SRC/load"
printf 'module example.invalid/etcdbench\n\ngo 1.26\n' >"$SRC/go.mod"
cat >"$SRC/server/main.go" <<'EOF'
// Command etcd-server is etcd's server, started as etcd's own binary starts it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
cat >"$SRC/load/main.go" <<'EOF'
// Command etcd-load writes to etcd as `vigil load writes` writes checks to Vigil: closed-loop
// clients, each waiting for its put's answer before the next, the same keys and bodies.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func main() {
	endpoints := flag.String("endpoints", "127.0.0.1:2379", "etcd endpoints")
	clients := flag.Int("clients", 1, "concurrent clients")
	duration := flag.Duration("duration", 10*time.Second, "how long to write")
	prefix := flag.String("prefix", "load", "key prefix")
	conns := flag.Int("conns", 1, "gRPC connections the clients share")
	flag.Parse()
	var cs []*clientv3.Client
	for range *conns {
		c, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(*endpoints, ","), DialTimeout: 5 * time.Second})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer c.Close()
		cs = append(cs, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *duration+30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	errs := 0
	start := time.Now()
	end := start.Add(*duration)
	var wg sync.WaitGroup
	for c := range *clients {
		wg.Go(func() {
			cli := cs[c%len(cs)]
			var mine []time.Duration
			bad := 0
			for i := 0; i < 10_000_000 && time.Now().Before(end); i++ {
				key := fmt.Sprintf("/checks/%s-%d-%d", *prefix, c, i%1000)
				val := fmt.Sprintf(`{"protocol": "tcp", "target": {"host": "127.0.0.1", "port": %d}}`, 1+(c*1000+i)%60000)
				t0 := time.Now()
				if _, err := cli.Put(ctx, key, val); err != nil {
					bad++
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	fmt.Printf("clients=%d: %d writes in %s: %.0f writes/s, p50 %.2f ms, p99 %.2f ms, max %.2f ms, %d errors\n",
		*clients, len(lat), elapsed.Round(time.Millisecond), float64(len(lat))/elapsed.Seconds(), q(0.5), q(0.99), q(1), errs)
}
EOF
cd "$SRC"
go get "go.etcd.io/etcd/server/v3@$VERSION" "go.etcd.io/etcd/client/v3@$VERSION" >/dev/null 2>&1
go mod tidy >/dev/null 2>&1
go build -o "$OUT/etcd-server" ./server
go build -o "$OUT/etcd-load" ./load
"$OUT/etcd-server" --version | head -1
