//go:build !linux

package location

import "net"

// serveMmsg reports false: batches go through golang.org/x/net here (serveUDP).
func (s *Server) serveMmsg(*listener, *net.UDPConn) bool { return false }
