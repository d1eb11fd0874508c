// Package netlab runs Vigil as a user runs it, on a real network of Linux network namespaces,
// one per region. Real `vigil` processes (control voters with raft and BoltDB, checkers,
// locations, demo targets) run in the namespaces, joined pairwise by links the harness
// carries. Faults are the kernel's: nftables drops packets for a cut, a one-way cut and packet
// loss; `kill -9` ends a process. WAN latency and jitter are added by the link itself, a pair
// of TUN devices whose packets a goroutine of the harness (the wire) delivers after a delay,
// because the kernel this project is built and tested on has no sch_netem.
//
// A run follows a script of package sim (cut, cut-oneway, heal, loss, latency, down, up,
// kill, start, kill-leader, hold), asks every region's location DNS queries from a client
// inside that region's namespace, records every query and every fault as applied, and hands
// the record to an independent judge. Everything a run creates (namespaces, nftables tables,
// TUN devices, processes, its data directory) is named after the harness's pid and removed at
// the end, on interruption, and by the next run when the owner died.
package netlab
