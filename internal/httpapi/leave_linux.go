package httpapi

import (
	"net"
	"sync"
	"syscall"
)

// leaveWatcher hears parked connections with no goroutine per connection:
// one epoll set holds their sockets and one goroutine waits on it, as
// net/http's backgroundRead did for each connection. A parked stream's
// socket is watched for EPOLLRDHUP (the client's FIN: the stream ends); a
// kept connection's (keep.go) for that or EPOLLIN (the client's next
// request). A socket is added once (EPOLLONESHOT): its callback runs when
// it fires, on the watcher's goroutine. The runtime's own poller cannot be
// asked for this without a goroutine blocked in a Read.
type leaveWatcher struct {
	mu      sync.Mutex
	epfd    int
	wake    [2]int // a pipe in the set, written to stop the watcher
	fired   map[int32]func(leave bool)
	next    int32
	started bool
	stopped chan struct{}
}

// Whether a watch waits for the client's leave only, or for its next
// request too.
const (
	forLeave   = syscall.EPOLLRDHUP
	forRequest = syscall.EPOLLRDHUP | syscall.EPOLLIN
)

// watch adds conn for what (forLeave, forRequest): fired runs once, with
// leave set when the client closed its side or the socket failed. It
// returns 0 when it cannot (the caller is then left without: a stream
// finds its client's leave by its pings' writes).
func (w *leaveWatcher) watch(conn net.Conn, what uint32, fired func(leave bool)) int32 {
	raw := rawConn(conn)
	if raw == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started && !w.start() {
		return 0
	}
	for { // a token not in use: 0 is the pipe's, and the count may wrap
		if w.next++; w.next <= 0 {
			w.next = 1
		}
		if _, used := w.fired[w.next]; !used {
			break
		}
	}
	token := w.next
	var err error
	cerr := raw.Control(func(fd uintptr) {
		err = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, int(fd),
			&syscall.EpollEvent{Events: what | syscall.EPOLLONESHOT, Fd: token})
	})
	if cerr != nil || err != nil {
		return 0
	}
	w.fired[token] = fired
	return token
}

// unwatch removes the connection watched as token; before the connection
// closes or goes elsewhere. Its callback may still run once if the socket
// fired just before: callbacks allow for that.
func (w *leaveWatcher) unwatch(token int32, conn net.Conn) {
	if token == 0 {
		return
	}
	w.mu.Lock()
	delete(w.fired, token)
	epfd := w.epfd
	w.mu.Unlock()
	if raw := rawConn(conn); raw != nil {
		_ = raw.Control(func(fd uintptr) { _ = syscall.EpollCtl(epfd, syscall.EPOLL_CTL_DEL, int(fd), nil) })
	}
}

// start makes the set and its goroutine; w.mu is held.
func (w *leaveWatcher) start() bool {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	if err := syscall.Pipe2(w.wake[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		syscall.Close(epfd)
		return false
	}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, w.wake[0], &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: 0}); err != nil {
		syscall.Close(epfd)
		syscall.Close(w.wake[0])
		syscall.Close(w.wake[1])
		return false
	}
	w.epfd, w.started, w.fired, w.stopped = epfd, true, map[int32]func(bool){}, make(chan struct{})
	go w.run()
	return true
}

// run waits for the sockets and runs their callbacks, until stop.
func (w *leaveWatcher) run() {
	defer close(w.stopped)
	events := make([]syscall.EpollEvent, 64)
	for {
		n, err := syscall.EpollWait(w.epfd, events, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			if ev.Fd == 0 {
				return // stop
			}
			w.mu.Lock()
			fired := w.fired[ev.Fd]
			delete(w.fired, ev.Fd) // one-shot: it fires once
			w.mu.Unlock()
			if fired != nil {
				fired(ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0)
			}
		}
	}
}

// stop ends the watcher's goroutine, once no stream is parked and no
// connection kept.
func (w *leaveWatcher) stop() {
	w.mu.Lock()
	started := w.started
	w.started = false
	w.mu.Unlock()
	if !started {
		return
	}
	_, _ = syscall.Write(w.wake[1], []byte{0})
	<-w.stopped
	syscall.Close(w.epfd)
	syscall.Close(w.wake[0])
	syscall.Close(w.wake[1])
}

// rawConn is conn's socket, through the wrappers that expose NetConn
// (fdbudget's); nil if it has none.
func rawConn(conn net.Conn) syscall.RawConn {
	for {
		u, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		conn = u.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}
