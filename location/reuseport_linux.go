package location

import (
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// defaultUDPSockets is the default of Config.UDPSockets: one socket per core, since Linux
// spreads the datagrams of a port over the sockets bound to it with SO_REUSEPORT.
func defaultUDPSockets() int { return runtime.GOMAXPROCS(0) }

// setReusePort sets SO_REUSEPORT on a socket before it is bound.
func setReusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}
