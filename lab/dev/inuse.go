package dev

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"
)

// AddrInUseError is Start's error when an address of the network is taken: it says which,
// what of the network wanted it, and what holds it when that is another dev network.
type AddrInUseError struct {
	// Addr is the address taken, host:port.
	Addr string
	// What is what of the network wanted it, e.g. "the sa-east demo target"; empty when
	// the address is none of the configured ones.
	What string
	// DevRunning is true when a dev network answers on the configured control address: the
	// likely holder is another `vigil dev` (or `make run`).
	DevRunning bool
	// Err is the listener's error.
	Err error
}

// Error says what is taken and what to do.
func (e *AddrInUseError) Error() string {
	what := ""
	if e.What != "" {
		what = " (" + e.What + ")"
	}
	_, port, _ := net.SplitHostPort(e.Addr)
	if e.DevRunning {
		return fmt.Sprintf("%s%s is in use: a vigil dev already runs here (`make run` starts one): stop it (Ctrl-C in its shell), or use the one running", e.Addr, what)
	}
	return fmt.Sprintf("%s%s is in use: is `make run` (vigil dev) already running? stop it, or stop what holds the port (`ss -ltnup 'sport = :%s'` names it)", e.Addr, what, port)
}

// Unwrap returns the listener's error.
func (e *AddrInUseError) Unwrap() error { return e.Err }

// inUse turns err into an *AddrInUseError when an address of the network is taken, and
// returns it unchanged otherwise.
func (c Config) inUse(err error) error {
	if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	e := &AddrInUseError{Err: err}
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil {
		e.Addr = op.Addr.String()
	}
	e.What = c.addrRole(e.Addr)
	e.DevRunning = devAnswers(c.ControlAddr)
	return e
}

// addrRole names what of the network listens on addr, or "" when nothing configured does.
func (c Config) addrRole(addr string) string {
	if addr == "" {
		return ""
	}
	if addr == c.ControlAddr {
		return "the control API"
	}
	for _, r := range c.Regions {
		switch addr {
		case c.Targets[r]:
			return "the " + r + " demo target"
		case c.Locations[r].DNS:
			return "the " + r + " location's DNS"
		case c.Locations[r].HTTP:
			return "the " + r + " location's HTTP"
		}
		for i, a := range c.CheckerHTTP[r] {
			if a == addr {
				return fmt.Sprintf("the HTTP of checker %s-checker-%d", r, i+1)
			}
		}
	}
	return ""
}

// devAnswers reports whether a dev network's control API answers at addr.
func devAnswers(addr string) bool {
	if addr == "" || strings.HasSuffix(addr, ":0") {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := Client{BaseURL: "http://" + addr}.Faults(ctx)
	return err == nil
}
