//go:build !unix

package shard

import "testing"

// processCPU cannot tell the CPU time on this platform.
func processCPU() (int64, bool) { return 0, false }

// reportCPU reports nothing on this platform.
func reportCPU(*testing.B, int64, int, string) {}
