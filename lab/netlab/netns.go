package netlab

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Namespace is one network namespace the harness made. Sockets for it are created by a
// goroutine that locks its OS thread, enters the namespace and ends without unlocking, so
// the thread (and its namespace) never runs anything else; a socket stays in the namespace
// it was created in whatever thread uses it later.
type Namespace struct {
	// Name is the namespace's name under /run/netns.
	Name string
	fd   int
}

// addNamespace creates the namespace name with its loopback up.
func addNamespace(ctx context.Context, name string) (*Namespace, error) {
	if err := ipCmd(ctx, "netns", "add", name); err != nil {
		return nil, err
	}
	ns := &Namespace{Name: name, fd: -1}
	fd, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = ipCmd(context.WithoutCancel(ctx), "netns", "del", name)
		return nil, fmt.Errorf("netlab: namespace %s: %w", name, err)
	}
	ns.fd = fd
	if err := ipCmd(ctx, "-n", name, "link", "set", "lo", "up"); err != nil {
		ns.delete()
		return nil, err
	}
	return ns, nil
}

// delete removes the namespace. Its sockets and devices go when the last of them closes.
func (ns *Namespace) delete() error {
	if ns.fd >= 0 {
		unix.Close(ns.fd)
		ns.fd = -1
	}
	return ipCmd(context.Background(), "netns", "del", ns.Name)
}

// Do runs f on a thread inside the namespace and returns its error. The thread ends with f.
func (ns *Namespace) Do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the runtime ends the thread with this goroutine, so no other
		// goroutine runs in the namespace by accident.
		runtime.LockOSThread()
		if err := unix.Setns(ns.fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netlab: enter namespace %s: %w", ns.Name, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// DialContext dials addr from inside the namespace, as net.Dialer.DialContext does.
func (ns *Namespace) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := ns.Do(func() error {
		var err error
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// ipCmd runs `ip args...`; the error holds its output.
func ipCmd(ctx context.Context, args ...string) error {
	return command(ctx, nil, "ip", args...)
}

// command runs name with args and stdin, and returns an error holding its output when it
// fails.
func command(ctx context.Context, stdin *strings.Reader, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("netlab: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
