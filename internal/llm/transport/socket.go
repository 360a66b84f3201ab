package transport

import "net"

// socketState is what the kernel holds for a connection (peek).
type socketState int

const (
	unknown socketState = iota // cannot be looked at on this system
	quiet                      // open, nothing received
	pending                    // bytes received, not yet read
	closed                     // closed by the server, or failed
)

// alive reports whether an idle connection may carry a request: the server
// has neither closed it nor sent anything on it.
func alive(c net.Conn) bool {
	st := peek(c)
	return st == quiet || st == unknown
}

// received reports whether bytes for c have come in that nobody has read.
func received(c net.Conn) bool { return peek(c) == pending }
