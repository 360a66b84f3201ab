//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package transport

import (
	"net"
	"syscall"
)

// alive reports whether an idle connection may still carry a request: the
// server has neither closed it nor sent anything on it. Without a
// goroutine reading each idle connection, as the standard transport has,
// this is looked at when the connection is taken: a peek that does not
// wait (the socket is non-blocking under Go's poller).
func alive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	var buf [1]byte
	// Returning true: never wait for readiness. EAGAIN is the answer of
	// an open, quiet connection; EOF (0 bytes) or bytes nobody asked for
	// mean it cannot be used.
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK)
		ok = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && ok
}
