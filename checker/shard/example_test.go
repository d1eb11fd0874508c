package shard_test

import (
	"fmt"

	"github.com/vigil-dns/vigil/checker/shard"
	"github.com/vigil-dns/vigil/config"
)

// Two checkers of us-east probe the check "web"; every node with the same view of the
// region's checkers, in whatever order, computes the same two.
func ExampleRegion_Shard() {
	east := shard.NewRegion("us-east", []string{"c1", "c2", "c3", "c4", "c5"})
	again := shard.NewRegion("us-east", []string{"c5", "c4", "c3", "c2", "c1"})
	fmt.Println(east.Shard("web", 2), again.Shard("web", 2))
	// Output: [c4 c1] [c4 c1]
}

// A zone's four name servers in stateful mode, as its NS records.
func ExampleAllocator_Allocate() {
	settings := config.DefaultDocument().NameServers
	settings.Mode = shard.ModeStateful
	ns, err := shard.NewNameServers(settings)
	if err != nil {
		panic(err)
	}
	alloc, err := ns.NewAllocator()
	if err != nil {
		panic(err)
	}
	servers, err := alloc.Allocate("Demo.Vigil.Test")
	if err != nil {
		panic(err)
	}
	fmt.Println(ns.Names(servers))
	fmt.Println(servers, ns.Stateless("demo.vigil.test."))
	// Output:
	// [ns-634.ns.vigil.test. ns-1236.ns.vigil.test. ns-1424.ns.vigil.test. ns-1821.ns.vigil.test.]
	// [634 1236 1424 1821] [634 1236 1424 1821]
}
