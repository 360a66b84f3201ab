//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package transport

import (
	"net"
	"syscall"
)

// peek looks at what the kernel holds for c without reading it or
// waiting (the socket is non-blocking under Go's poller). Without a
// goroutine reading each idle connection, as the standard transport has,
// this is how a connection the server closed is told apart.
func peek(c net.Conn) socketState {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return unknown
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return closed
	}
	st := closed
	var buf [1]byte
	// Returning true: never wait for readiness.
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK)
		switch {
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			st = quiet
		case err == nil && n > 0:
			st = pending
		}
		return true
	})
	if err != nil {
		return closed
	}
	return st
}
