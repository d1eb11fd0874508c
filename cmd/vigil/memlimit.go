package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// memoryLimit returns the soft memory limit the agent sets, in bytes, and where it comes
// from; 0 to set none (none asked for, or GOMEMLIMIT set, which the runtime applies itself).
// flag is -memory-limit: a size as GOMEMLIMIT writes it (a number of bytes with an optional
// B, KiB, MiB, GiB or TiB), "off", or empty for the default: 90% of the cgroup's memory.max
// when one is set, leaving room for what the runtime does not count (stacks of goroutines
// aside, the runtime's own) before the kernel's limit kills the process. Without a limit the
// heap grows to twice what is live before a collection (GOGC=100): a location at 1,000,000
// checks was measured at 1.9 times its live heap resident (SCALE.md).
func memoryLimit(flag, env string, cgroupMax func() (int64, bool)) (int64, string, error) {
	switch {
	case flag == "off":
		return 0, "", nil
	case flag != "":
		n, err := parseSize(flag)
		if err != nil {
			return 0, "", err
		}
		if n <= 0 {
			return 0, "", fmt.Errorf("%q: not a positive size", flag)
		}
		return n, "-memory-limit", nil
	case env != "":
		return 0, "", nil
	}
	if m, ok := cgroupMax(); ok {
		return m / 10 * 9, "cgroup memory.max", nil
	}
	return 0, "", nil
}

// parseSize reads a size as GOMEMLIMIT writes it: a number of bytes, with an optional unit.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	num, shift := s, uint(0)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			num, shift = rest, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("%q: want bytes with an optional B, KiB, MiB, GiB or TiB, e.g. 2GiB", s)
	}
	return n << shift, nil
}

// cgroupMemoryMax returns the memory.max of this process's cgroup (v2), if one is set.
func cgroupMemoryMax() (int64, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		path, ok := strings.CutPrefix(strings.TrimSpace(line), "0::")
		if !ok {
			continue
		}
		m, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", path, "memory.max"))
		if err != nil {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(m)), 10, 64)
		return n, err == nil && n > 0
	}
	return 0, false
}
