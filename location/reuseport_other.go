//go:build !linux

package location

import (
	"errors"
	"syscall"
)

// defaultUDPSockets is the default of Config.UDPSockets: one, where SO_REUSEPORT does not
// spread the datagrams of a port over its sockets.
func defaultUDPSockets() int { return 1 }

// setReusePort fails: several sockets per listener are for Linux.
func setReusePort(_, _ string, _ syscall.RawConn) error {
	return errors.New("SO_REUSEPORT: not used on this platform")
}
