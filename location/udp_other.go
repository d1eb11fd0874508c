//go:build !linux

package location

import "net"

// setUDPBuffers asks for udpReceiveBuffer on c; the system may give less.
func setUDPBuffers(c *net.UDPConn) error { return c.SetReadBuffer(udpReceiveBuffer) }

// serveMmsg reports false: batches go through golang.org/x/net here (serveUDP).
func (s *Server) serveMmsg(*listener, *net.UDPConn) bool { return false }
