package main

import "testing"

// TestMemoryLimit: -memory-limit's sizes, "off", GOMEMLIMIT left to the runtime, and the
// cgroup's memory.max as the default.
func TestMemoryLimit(t *testing.T) {
	cgroup := func(n int64) func() (int64, bool) { return func() (int64, bool) { return n, n > 0 } }
	for _, c := range []struct {
		flag, env string
		cgroup    int64
		want      int64
		err       bool
	}{
		{flag: "2GiB", want: 2 << 30},
		{flag: "1800MiB", cgroup: 1 << 40, want: 1800 << 20},
		{flag: "12345", want: 12345},
		{flag: "64KiB", want: 64 << 10},
		{flag: "off", cgroup: 1 << 30, want: 0},
		{flag: "", env: "1GiB", cgroup: 4 << 30, want: 0},
		{flag: "", cgroup: 10 << 30, want: 9 << 30},
		{flag: "", want: 0},
		{flag: "2GB", err: true},
		{flag: "-1MiB", err: true},
		{flag: "0", err: true},
		{flag: "99999999TiB", err: true},
	} {
		got, _, err := memoryLimit(c.flag, c.env, cgroup(c.cgroup))
		if (err != nil) != c.err || got != c.want {
			t.Errorf("memoryLimit(%q, env %q, cgroup %d) = %d, %v; want %d, error %v", c.flag, c.env, c.cgroup, got, err, c.want, c.err)
		}
	}
}
