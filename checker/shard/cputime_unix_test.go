//go:build unix

package shard

import (
	"syscall"
	"testing"
)

// processCPU returns the user and system CPU time this process has used, in nanoseconds,
// and whether it could tell.
func processCPU() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}

// reportCPU reports the CPU time used since start (from processCPU) per op, or per item when
// an op handles perOp items, in the given unit: on a machine shared with other builds, wall
// time includes the time the benchmark waited for a core and CPU time does not. It is only
// meaningful with -cpu 1, when this process runs one goroutine at a time.
func reportCPU(b *testing.B, start int64, perOp int, unit string) {
	if end, ok := processCPU(); ok && b.N > 0 {
		b.ReportMetric(float64(end-start)/float64(b.N*perOp), unit)
	}
}
