package router

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// deviceMTU leaves room for the IPv4 and UDP headers that carry each packet between routers
// on a network of MTU 1500.
const deviceMTU = 1400

// OpenDevice creates the TUN device name in the calling process's network namespace (it
// needs CAP_NET_ADMIN and /dev/net/tun), brings it up with an MTU of 1400, and routes each
// subnet through it with src as the source address of what the namespace sends there.
func OpenDevice(name string, src netip.Addr, subnets []netip.Prefix) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("router: open /dev/net/tun: %w", err)
	}
	f, err := func() (*os.File, error) {
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			return nil, err
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			return nil, fmt.Errorf("TUNSETIFF: %w", err)
		}
		if err := linkUp(name); err != nil {
			return nil, err
		}
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return nil, err
		}
		for _, s := range subnets {
			if err := addRoute(ifi.Index, s, src); err != nil {
				return nil, fmt.Errorf("route %s: %w", s, err)
			}
		}
		f := os.NewFile(uintptr(fd), name)
		if f == nil {
			return nil, errors.New("bad file descriptor")
		}
		return f, nil
	}()
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("router: device %s: %w", name, err)
	}
	return f, nil
}

// linkUp sets the device's MTU and brings it up.
func linkUp(name string) error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	ifr.SetUint32(deviceMTU)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFMTU, ifr); err != nil {
		return fmt.Errorf("set MTU: %w", err)
	}
	ifr, _ = unix.NewIfreq(name)
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("get flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up: %w", err)
	}
	return nil
}

// addRoute adds (or replaces) the route to dst through the interface numbered ifindex,
// with src as preferred source, in the main table: one rtnetlink request and its answer.
func addRoute(ifindex int, dst netip.Prefix, src netip.Addr) error {
	if !dst.Addr().Is4() || !src.Is4() {
		return errors.New("IPv4 only")
	}
	attr := func(typ uint16, data []byte) []byte {
		b := make([]byte, unix.SizeofRtAttr, unix.SizeofRtAttr+len(data)+3)
		binary.NativeEndian.PutUint16(b[0:], uint16(unix.SizeofRtAttr+len(data)))
		binary.NativeEndian.PutUint16(b[2:], typ)
		b = append(b, data...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	d4, s4 := dst.Masked().Addr().As4(), src.As4()
	oif := binary.NativeEndian.AppendUint32(nil, uint32(ifindex))
	rt := []byte{unix.AF_INET, byte(dst.Bits()), 0, 0, unix.RT_TABLE_MAIN, unix.RTPROT_STATIC, unix.RT_SCOPE_LINK, unix.RTN_UNICAST, 0, 0, 0, 0}
	body := append(rt, attr(unix.RTA_DST, d4[:])...)
	body = append(body, attr(unix.RTA_OIF, oif)...)
	body = append(body, attr(unix.RTA_PREFSRC, s4[:])...)
	msg := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body))
	binary.NativeEndian.PutUint32(msg[0:], uint32(unix.SizeofNlMsghdr+len(body)))
	binary.NativeEndian.PutUint16(msg[4:], unix.RTM_NEWROUTE)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_REPLACE)
	binary.NativeEndian.PutUint32(msg[8:], 1)
	msg = append(msg, body...)

	s, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(s)
	if err := unix.Sendto(s, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(s, buf, 0)
	if err != nil {
		return fmt.Errorf("netlink receive: %w", err)
	}
	if n >= unix.SizeofNlMsghdr+4 && binary.NativeEndian.Uint16(buf[4:]) == unix.NLMSG_ERROR {
		if code := int32(binary.NativeEndian.Uint32(buf[unix.SizeofNlMsghdr:])); code != 0 {
			return fmt.Errorf("netlink: %w", unix.Errno(-code))
		}
		return nil
	}
	return errors.New("netlink: no acknowledgement")
}
