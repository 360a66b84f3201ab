//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package transport

import "net"

// peek cannot look at the socket here: a connection the server closed
// fails its next request, which is sent once more (Transport.start).
func peek(net.Conn) socketState { return unknown }

// readable cannot wait for readability alone here: a chunked body holds its
// buffer while it waits, as net/http's reader does.
func readable(net.Conn) func() { return nil }
