package httpapi

import (
	"cmp"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// A stream detached from net/http (detach.go) holds its connection, which
// net/http would have kept for the client's next request once the stream
// ended. So that detaching costs the client nothing, a detached stream that
// ended cleanly keeps its connection alive itself: it waits, with no
// goroutine, for the client's next request (the leave watcher's epoll set:
// EPOLLIN) or leave (EPOLLRDHUP), for at most the server's idle timeout, as
// net/http waits between two requests on a connection; then it hands the
// connection back to the http.Server, through the listener that Listen
// wraps, as a new connection that net/http serves as any other. Where the
// next request cannot be waited for so (not Linux), the connection goes
// back at once, and net/http's header timeout bounds the wait instead.
//
// Without Listen (a server run by a caller that did not wrap its
// listener), a detached stream closes its connection when it ends.

// Listen wraps ln, the listener the http.Server serving s accepts from, so
// that connections its detached streams took from net/http come back to it
// when their streams end (keep.go); idle is the http.Server's IdleTimeout,
// how long a connection waits for the client's next request.
func (s *Server) Listen(ln net.Listener, idle time.Duration) net.Listener {
	l := &relistener{Listener: ln, back: make(chan net.Conn), accepted: make(chan acceptResult), done: make(chan struct{})}
	go l.accept()
	s.keep.mu.Lock()
	s.keep.ln, s.keep.idle = l, cmp.Or(idle, defaultIdle)
	s.keep.mu.Unlock()
	return l
}

// defaultIdle is how long a kept connection waits for the next request
// when Listen is given no idle timeout.
const defaultIdle = 2 * time.Minute

// relistener is a listener that also hands out connections given back
// (back) by kept connections whose client sent its next request. One
// goroutine accepts from the listener it wraps, so that Accept can wait for
// either.
type relistener struct {
	net.Listener
	back     chan net.Conn
	accepted chan acceptResult
	done     chan struct{} // closed by Close
	once     sync.Once
}

type acceptResult struct {
	c   net.Conn
	err error
}

// accept passes on what the wrapped listener accepts, errors included
// (net/http's Serve retries the temporary ones), until one is not
// temporary or the listener is closed.
func (l *relistener) accept() {
	for {
		c, err := l.Listener.Accept()
		select {
		case l.accepted <- acceptResult{c, err}:
		case <-l.done:
			if c != nil {
				c.Close()
			}
			return
		}
		if ne, ok := err.(interface{ Temporary() bool }); err != nil && (!ok || !ne.Temporary()) {
			return
		}
	}
}

// Accept returns the next connection, new or given back.
func (l *relistener) Accept() (net.Conn, error) {
	select {
	case c := <-l.back:
		return c, nil
	case a := <-l.accepted:
		return a.c, a.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close closes the wrapped listener; connections given back after it are
// closed.
func (l *relistener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// give hands c to the server's Serve, or closes it once the listener is
// closed.
func (l *relistener) give(c net.Conn) {
	select {
	case l.back <- c:
	case <-l.done:
		c.Close()
	}
}

// keeper holds the connections kept alive between a detached stream's end
// and the client's next request, so that Close can close them.
type keeper struct {
	mu     sync.Mutex
	ln     *relistener
	idle   time.Duration
	conns  map[*kept]struct{}
	closed bool
}

// kept is a connection waiting for its client's next request.
type kept struct {
	conn    net.Conn
	watched int32
	timer   *time.Timer
	done    atomic.Bool // the wait is over: handed back or closed
}

// keepConn waits for conn's next request and then hands it back; false, and
// conn is the caller's to close, when the server is closing or has no
// listener to hand it to.
func (s *Server) keepConn(conn net.Conn) bool {
	k := &s.keep
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ln == nil || k.closed {
		return false
	}
	select {
	case <-s.closing: // a stream's goodbye: the server is going
		return false
	default:
	}
	// The stream's last write deadline would cut the next response short;
	// net/http sets its own deadlines per request.
	if conn.SetDeadline(time.Time{}) != nil {
		return false
	}
	kc := &kept{conn: conn}
	kc.watched = s.leave.watch(conn, forRequest, func(leave bool) { s.endKept(kc, !leave) })
	if kc.watched == 0 {
		go k.ln.give(conn) // no way to wait without a goroutine: net/http waits
		return true
	}
	if k.conns == nil {
		k.conns = map[*kept]struct{}{}
	}
	k.conns[kc] = struct{}{}
	kc.timer = time.AfterFunc(k.idle, func() { s.endKept(kc, false) })
	return true
}

// endKept ends kc's wait: its connection goes back to net/http for the
// request that came (next), or is closed (the client left, the idle
// timeout, the server closing). Only the first end counts.
func (s *Server) endKept(kc *kept, next bool) {
	if kc.done.Swap(true) {
		return
	}
	k := &s.keep
	k.mu.Lock() // after keepConn set kc up
	delete(k.conns, kc)
	ln, timer, watched := k.ln, kc.timer, kc.watched
	k.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	s.leave.unwatch(watched, kc.conn)
	if next {
		go ln.give(kc.conn) // not on the watcher's goroutine: Serve may be busy
		return
	}
	kc.conn.Close()
}

// close closes the kept connections and keeps no more; part of Server.Close.
func (s *Server) closeKept() {
	k := &s.keep
	k.mu.Lock()
	k.closed = true
	conns := make([]*kept, 0, len(k.conns))
	for kc := range k.conns {
		conns = append(conns, kc)
	}
	k.mu.Unlock()
	for _, kc := range conns {
		s.endKept(kc, false)
	}
}
