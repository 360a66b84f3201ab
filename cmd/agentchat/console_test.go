package main

import (
	"net"
	"testing"
)

func TestConsoleURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "http://127.0.0.1:8080/"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "http://127.0.0.1:8080/"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 9000}, "http://[::1]:9000/"},
		{&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 80}, "http://10.1.2.3:80/"},
	}
	for _, tt := range tests {
		if got := consoleURL(tt.addr); got != tt.want {
			t.Errorf("consoleURL(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}
