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

// readable returns a function that waits until c has something to read
// (bytes, its end, an error) or its read deadline passes, without reading
// it and so without a buffer; nil if c cannot be waited on so. The wait is
// the one net's own reads make (the poller), with a non-blocking MSG_PEEK
// in place of the read.
func readable(c net.Conn) func() {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var b [1]byte
	calls := 0
	ready := func(fd uintptr) bool {
		// Called again once the poller saw the socket readable: the read
		// that follows tells what came, with no second look here.
		if calls++; calls > 1 {
			return true
		}
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		return err != syscall.EAGAIN && err != syscall.EWOULDBLOCK
	}
	return func() {
		calls = 0
		rc.Read(ready)
	}
}
