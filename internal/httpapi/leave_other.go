//go:build !linux

package httpapi

import "net"

// leaveWatcher hears parked connections on Linux only (leave_linux.go);
// elsewhere a parked stream finds its client gone by its pings' writes, and
// a kept connection goes back to net/http at once.
type leaveWatcher struct{}

// Whether a watch waits for the client's leave only, or for its next
// request too (unused here).
const (
	forLeave   = 0
	forRequest = 0
)

func (*leaveWatcher) watch(net.Conn, uint32, func(bool)) int32 { return 0 }
func (*leaveWatcher) unwatch(int32, net.Conn)                  {}
func (*leaveWatcher) stop()                                    {}
