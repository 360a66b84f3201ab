//go:build !linux

package httpapi

import "net"

// leaveWatcher hears parked streams' clients leave on Linux only
// (leave_linux.go); elsewhere a parked stream finds its client gone by its
// pings' writes.
type leaveWatcher struct{}

func (*leaveWatcher) watch(*sseStream, net.Conn) int32 { return 0 }
func (*leaveWatcher) unwatch(int32, net.Conn)          {}
func (*leaveWatcher) stop()                            {}
