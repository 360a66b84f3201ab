package httpapi

import (
	"context"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
)

// A stream on HTTP/1.1 is detached from net/http: once its headers and
// preamble are out and it has nothing to send, it takes its connection
// (Hijack), its handler returns, and it parks with no goroutine at all. While
// a handler runs, net/http holds the connection's buffers (4 KiB read, 4 KiB
// write, 2 KiB for the response), the connection's goroutine with the stack
// the request grew, and a goroutine reading ahead for the client's leave:
// about 25 KiB a stream, before the collector's headroom, for a stream that
// may wait for hours, or follow a run for minutes. Parked, a stream holds
// its own state, its subscription, its connection and two timers.
//
// A parked stream is woken by its subscription (run.Stream.Notify), its
// ping and check timers, and the server's Close; a short-lived goroutine
// then does what the stream's loop (sseStream.serve) would do on that wake,
// without blocking: it writes everything queued by then, so a burst of
// tokens is one wake, and parks it again (step). A client that left is
// heard by one goroutine for all parked streams (leaveWatcher: an epoll set
// on Linux), and else found by the next write: the keep-alive pings write
// every ping interval, so a parked stream of a client gone is freed within
// two of them (the first write after the client's close may still be taken
// by the socket).
//
// Every stream detaches: thread streams between runs (run.Stream.Idle) at
// once, and any stream that waits once it has been open for Config.DetachAfter:
// thread streams while a run streams, run streams, and the streams a POST
// starts (a chat, an AG-UI run, a chain), whose body was read whole. Only
// on HTTP/1.1, where net/http chunks the body: HTTP/2 cannot hijack. A
// detached stream writes the chunked body itself and, when it ends, the
// body's last chunk; then its connection waits for the client's next
// request and goes back to net/http (keep.go), or is closed.
//
// A stream with a run to follow detaches only once it has been open for
// Config.DetachAfter (250 ms): detaching and keeping the connection for the
// next request cost a hijack, epoll calls and a new net/http connection,
// nothing beside a run of seconds but a fifth more CPU for a one-token chat
// (docs/benchmarks.md, seventh round), which ends before.

// detacher is a stream route's context, which a detached stream keeps
// after its handler returned: net/http cancels the request's context then.
type detacher struct {
	cancel context.CancelFunc // ends the stream's context
	unhook func() bool        // stops the request's context from cancelling it
	// read is set once the request's body was read whole (readBody): what
	// follows on the connection is the client's next request.
	read bool
	// keep is set when the connection may serve the client's next request
	// after the stream (keep.go).
	keep bool
}

type detacherKey struct{}

// detachable gives a stream route a context of its own, cancelled with the
// request's until the stream detaches. The stream's subscription is tied to
// the context it opened with, so it must be this one from the start.
func detachable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parent := r.Context()
		ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
		d := &detacher{cancel: cancel, unhook: context.AfterFunc(parent, cancel)}
		h.ServeHTTP(w, r.WithContext(context.WithValue(ctx, detacherKey{}, d)))
	})
}

// canDetach reports whether the stream of r, its headers set, may detach;
// its detacher if so.
func canDetach(r *http.Request, h http.Header) *detacher {
	d, _ := r.Context().Value(detacherKey{}).(*detacher)
	if d == nil || r.ProtoMajor != 1 || r.ProtoMinor < 1 || (r.Method != http.MethodGet && r.Method != http.MethodPost) ||
		h.Get("Content-Length") != "" || h.Get("Transfer-Encoding") != "" {
		return nil // net/http would not chunk the body, or cannot hand the connection over
	}
	if r.Body != http.NoBody && !d.read {
		return nil // the body's rest would be read as the next request
	}
	// As net/http: a connection the client asked to close is closed. A TLS
	// connection cannot be handed back under the listener's TLS.
	d.keep = !r.Close && r.TLS == nil
	return d
}

// bodyRead notes that r's body was read whole, for canDetach.
func bodyRead(r *http.Request) {
	if d, ok := r.Context().Value(detacherKey{}).(*detacher); ok {
		d.read = true
	}
}

// parking is a detached stream's wake state. Its goroutine runs only
// while running; a wake meanwhile sets again, so no wake is lost and at
// most one goroutine serves the stream.
type parking struct {
	mu                sync.Mutex
	live              bool // the stream is detached and may be woken
	running, again    bool
	over              bool // the stream has ended: wakes are ignored
	pingDue, checkDue bool
	ping              *time.Timer
}

// detach takes the stream's connection from net/http and parks the stream;
// false if it stays where it is.
func (ss *sseStream) detach() bool {
	pk := &parking{}
	ss.pk = pk
	if !ss.s.detached.add(ss) {
		return false // the server is closing: the stream says goodbye where it is
	}
	conn, brw, err := ss.rc.Hijack() // flushes what net/http holds
	if err != nil {
		ss.s.detached.remove(ss)
		ss.d = nil // it will not detach later either
		return false
	}
	// From here the stream's context ends only with the stream: the
	// handler's return cancels the request's. A client that sent more than
	// its request (a pipelined one) is not served further: brw is dropped,
	// and the connection closed at the stream's end.
	if brw.Reader.Buffered() > 0 {
		ss.d.keep = false
	}
	ss.d.unhook()
	ss.conn, ss.w, ss.rc, ss.deadline = conn, nil, nil, time.Time{}
	ss.watched = ss.s.leave.watch(conn, forLeave, func(bool) {
		ss.d.cancel() // the client is gone: the stream's next round ends it
		ss.wake(nil)
	})
	if info, ok := ss.ctx.Value(logInfoKey{}).(*logInfo); ok {
		ss.info = info
		info.detach()
	}
	ss.ping.Stop()
	ss.check.Stop()
	ss.ping = nil
	pk.ping = time.AfterFunc(ss.s.ping, func() { ss.wake(&pk.pingDue) })
	ss.check, ss.checkSet = time.AfterFunc(time.Hour, func() { ss.wake(&pk.checkDue) }), true
	ss.arm()
	ss.st.Notify(func() { ss.wake(nil) })
	pk.mu.Lock()
	pk.live = true
	pk.mu.Unlock()
	ss.wake(nil) // for what came before Notify
	return true
}

// wake has a parked stream look at what woke it: due, if set, is the
// timer that did.
func (ss *sseStream) wake(due *bool) {
	pk := ss.pk
	pk.mu.Lock()
	if due != nil {
		*due = true
	}
	switch {
	case !pk.live || pk.over:
	case pk.running:
		pk.again = true
	default:
		pk.running = true
		go ss.step()
	}
	pk.mu.Unlock()
}

// step serves a woken stream until nothing is left to do, then parks it,
// or ends it.
func (ss *sseStream) step() {
	pk := ss.pk
	for {
		more := ss.round()
		pk.mu.Lock()
		switch {
		case !more:
			pk.over = true
			pk.mu.Unlock()
			ss.close()
			ss.s.detached.remove(ss)
			return
		case !pk.again:
			pk.running = false
			pk.mu.Unlock()
			return
		}
		pk.again = false
		pk.mu.Unlock()
	}
}

// round is one wake of a parked stream: what serve's loop does for the
// shutdown, a ping, a check and the events ready, without waiting. false
// once the stream is over.
func (ss *sseStream) round() (more bool) {
	defer func() {
		if p := recover(); p != nil {
			ss.s.log.ErrorContext(ss.ctx, "panic in a detached stream", "panic", p, "stack", string(debug.Stack()))
			more = false
		}
	}()
	pk := ss.pk
	pk.mu.Lock()
	ping, check := pk.pingDue, pk.checkDue
	pk.pingDue, pk.checkDue = false, false
	pk.mu.Unlock()
	select {
	case <-ss.done:
		return false
	default:
	}
	select {
	case <-ss.s.closing:
		ss.abort(event.ErrorInfo{Code: errcode.ServerShutdown, Message: "the server is restarting; reconnect with Last-Event-ID to continue"})
		return false
	default:
	}
	if ping {
		if !ss.keepAlive(time.Now()) {
			return false
		}
		pk.ping.Reset(ss.s.ping)
	}
	wait := !ss.st.Pending()
	if check && wait {
		wait = !ss.checkLog()
	}
	for {
		if wait {
			select {
			case <-ss.st.Ready():
			default:
				return true // parked until the next wake
			}
		}
		if wait, more = ss.deliver(); !more {
			return false
		}
	}
}

// writeChunk writes out as one chunk of the body; false if the client is
// gone.
func (ss *sseStream) writeChunk(out []byte) bool {
	if ss.broken {
		return false
	}
	buf := getFrames()
	buf = strconv.AppendInt(buf, int64(len(out)), 16)
	buf = append(buf, "\r\n"...)
	buf = append(buf, out...)
	buf = append(buf, "\r\n"...)
	ok := ss.writeConn(buf)
	putFrames(buf)
	return ok
}

// writeConn writes b to the detached connection, within writeTimeout.
func (ss *sseStream) writeConn(b []byte) bool {
	if now := time.Now(); ss.deadline.Sub(now) < writeTimeout-deadlineSlack {
		ss.deadline = now.Add(writeTimeout)
		_ = ss.conn.SetWriteDeadline(ss.deadline)
	}
	if _, err := ss.conn.Write(b); err != nil {
		ss.broken = true
		return false
	}
	return true
}

// closeConn ends a detached stream's body, and keeps its connection for the
// client's next request (keep.go) or closes it.
func (ss *sseStream) closeConn() {
	keep := ss.d.keep && ss.ctx.Err() == nil
	if !ss.broken {
		ss.writeConn([]byte("0\r\n\r\n")) // the body's last chunk
	}
	ss.s.leave.unwatch(ss.watched, ss.conn)
	if ss.broken || !keep || !ss.s.keepConn(ss.conn) {
		ss.conn.Close()
	}
	ss.d.cancel()
	if ss.info != nil {
		ss.info.end()
	}
}

// detach marks the request as outliving its handler: its end (the access
// log, the span) waits for the stream's.
func (li *logInfo) detach() {
	li.mu.Lock()
	li.detached = true
	li.mu.Unlock()
}

// deferEnd hands the request's end to its detached stream; false (the
// caller ends it) when it is not detached or its stream has ended already.
func (li *logInfo) deferEnd(end func()) bool {
	li.mu.Lock()
	defer li.mu.Unlock()
	if !li.detached || li.ended {
		return false
	}
	li.finish = end
	return true
}

// end is a detached stream's end: it ends the request, if its handler has
// returned.
func (li *logInfo) end() {
	li.mu.Lock()
	li.ended = true
	end := li.finish
	li.finish = nil
	li.mu.Unlock()
	if end != nil {
		end()
	}
}

// detachedSet holds the streams parked off net/http, so Close can wake
// them and wait for their goodbyes: http.Server.Shutdown knows them not.
// Once closed it takes no more: a stream that would detach then stays in
// its handler.
type detachedSet struct {
	mu      sync.Mutex
	streams map[*sseStream]struct{}
	closed  bool
	none    chan struct{} // closed when closed and no stream is left
}

func (d *detachedSet) add(ss *sseStream) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	if d.streams == nil {
		d.streams = map[*sseStream]struct{}{}
	}
	d.streams[ss] = struct{}{}
	return true
}

func (d *detachedSet) remove(ss *sseStream) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.streams, ss)
	if len(d.streams) == 0 && d.closed {
		close(d.none)
	}
}

// close refuses further streams, wakes those parked (they see the server
// closing and say goodbye) and waits for them to end.
func (d *detachedSet) close() {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		d.none = make(chan struct{})
		if len(d.streams) == 0 {
			close(d.none)
		}
		for ss := range d.streams {
			ss.wake(nil)
		}
	}
	none := d.none
	d.mu.Unlock()
	<-none
}
