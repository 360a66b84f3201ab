package main

import (
	"net"
	"strconv"
)

// consoleURL is the address to open in a browser for the console served at
// "/". A wildcard listen address (":8080", "0.0.0.0", "[::]") is not one a
// browser can open, so it becomes the loopback address of the same family.
func consoleURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
	case ip.Equal(net.IPv4zero):
		host = "127.0.0.1"
	case ip.Equal(net.IPv6unspecified):
		host = "::1"
	}
	if _, err := strconv.Atoi(port); err != nil {
		return "http://" + addr.String() + "/"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
