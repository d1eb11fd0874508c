//go:build unix

package checker

import "syscall"

// openFileLimit is the process's limit of open files (RLIMIT_NOFILE, the soft limit, which
// the Go runtime raises to the hard one at start), or 0 when unknown.
func openFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}
