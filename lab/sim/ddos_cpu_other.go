//go:build !unix

package sim

import "time"

// processCPU cannot tell the CPU time on this system.
func processCPU() (time.Duration, bool) { return 0, false }
