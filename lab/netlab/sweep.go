package netlab

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// namePrefix starts the name of every namespace and data directory the harness makes,
// followed by the owner's pid and '-': "vgl1234-5678-us-east", "/tmp/vgl1234-run-5678".
// VIGIL_NETLAB_PREFIX replaces "vgl" (lower-case letters and digits, at most 8), so that
// people sharing a machine can tell their namespaces apart; Sweep removes only its own.
var namePrefix = prefixFrom(os.Getenv("VIGIL_NETLAB_PREFIX"))

// prefixFrom returns p when it is a usable name prefix, else "vgl".
func prefixFrom(p string) string {
	if p == "" || len(p) > 8 || strings.Trim(p, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		return "vgl"
	}
	return p
}

// ownerPid returns the pid a harness-made name carries ("vgl1234-…" -> 1234).
func ownerPid(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(digits)
	if !ok || err != nil || pid <= 0 || digits != strconv.Itoa(pid) {
		return 0, false
	}
	return pid, true
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Sweep removes what runs whose harness died left behind: the processes still in their
// namespaces, the namespaces (with their nftables tables and devices) and their data
// directories under os.TempDir(). Runs of a live harness are left alone. It returns what
// it removed.
func Sweep(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("netlab: ip netns list: %w", err)
	}
	var removed []string
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, _, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		pid, ok := ownerPid(name)
		if !ok || alive(pid) {
			continue
		}
		if pids, err := exec.CommandContext(ctx, "ip", "netns", "pids", name).Output(); err == nil {
			for _, f := range strings.Fields(string(pids)) {
				if p, err := strconv.Atoi(f); err == nil && p > 1 {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
		}
		if err := ipCmd(ctx, "netns", "del", name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "namespace "+name)
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), namePrefix+"*"))
	for _, d := range dirs {
		if pid, ok := ownerPid(filepath.Base(d)); ok && !alive(pid) {
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, fmt.Errorf("netlab: %w", err))
				continue
			}
			removed = append(removed, "directory "+d)
		}
	}
	return removed, errors.Join(errs...)
}
