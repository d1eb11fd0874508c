// Package sdnotify tells the service manager (systemd, for a unit of Type=notify) how a
// service is doing, as sd_notify(3) does. It sends newline-separated KEY=VALUE lines, such as
// READY=1, STATUS=... and STOPPING=1, in one datagram to the unix socket named by
// $NOTIFY_SOCKET (a path, or an abstract name written with a leading @).
package sdnotify

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Notifier sends state lines to one socket. The zero value, and a nil *Notifier, send
// nothing: a service started without a manager to tell runs alike.
type Notifier struct {
	socket string
}

// New returns a notifier for the socket named socket, as $NOTIFY_SOCKET names it; nil when
// socket is empty.
func New(socket string) *Notifier {
	if socket == "" {
		return nil
	}
	return &Notifier{socket: socket}
}

// Notify sends state (e.g. "READY=1", or several lines) in one datagram.
func (n *Notifier) Notify(state string) error {
	if n == nil || n.socket == "" {
		return nil
	}
	// Go's unix addresses name the abstract namespace as systemd does, with a leading @.
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sdnotify: %s: %w (is NOTIFY_SOCKET the service manager's socket?)", n.socket, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sdnotify: %s: %w", n.socket, err)
	}
	return nil
}

// Readiness is what Watch asks of the service every poll: whether it is ready, and, when not,
// why (sent as STATUS=).
type Readiness func() (ready bool, why string)

// Watch asks ready every poll until it says ready, then sends READY=1 once; while it is not,
// each new reason is sent as STATUS=. When ctx ends, it sends STOPPING=1 and returns. Errors
// of sending are given to onErr (which may be nil) and do not stop the watch.
func (n *Notifier) Watch(ctx context.Context, ready Readiness, poll time.Duration, onErr func(error)) {
	if n == nil {
		return
	}
	send := func(state string) {
		if err := n.Notify(state); err != nil && onErr != nil {
			onErr(err)
		}
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	last := ""
	for {
		ok, why := ready()
		if ok {
			send("READY=1\nSTATUS=ready")
			break
		}
		if why != last {
			send("STATUS=" + why)
			last = why
		}
		select {
		case <-ctx.Done():
			send("STOPPING=1")
			return
		case <-t.C:
		}
	}
	<-ctx.Done()
	send("STOPPING=1")
}
