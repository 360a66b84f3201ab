package httpapi

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// An idle stream on HTTP/1.1 is detached from net/http: once its headers
// and preamble are out and it has nothing to send, it takes its connection
// (Hijack), its handler returns, and it goes on on a goroutine of its own,
// writing the chunked body itself. While a handler runs, net/http holds the
// connection's buffers (4 KiB read, 4 KiB write, 2 KiB for the response),
// the connection's goroutine with the stack the request grew, and a
// goroutine reading ahead for the client's leave: about 25 KiB a stream,
// before the collector's headroom, for a stream that may wait for hours.
// Detached, it holds its own state, a small goroutine serving it and one
// waiting on the connection to hear the client leave.
//
// Only thread streams between runs detach (run.Stream.Idle), and only on
// HTTP/1.1 GETs whose body net/http chunks: HTTP/2 cannot hijack, and a
// chat's stream, which ends with its run, keeps its connection for the
// client's next request. A detached stream closes its connection when it
// ends, after the body's last chunk.

// detacher is a stream route's context, which a detached stream keeps
// after its handler returned: net/http cancels the request's context then.
type detacher struct {
	cancel context.CancelFunc // ends the stream's context
	unhook func() bool        // stops the request's context from cancelling it
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
	if d == nil || r.ProtoMajor != 1 || r.ProtoMinor < 1 || r.Method != http.MethodGet ||
		h.Get("Content-Length") != "" || h.Get("Transfer-Encoding") != "" {
		return nil // net/http would not chunk the body, or cannot hand the connection over
	}
	return d
}

// detach takes the stream's connection from net/http and serves the rest of
// the stream on a goroutine of its own; false if it stays where it is.
func (ss *sseStream) detach() bool {
	if !ss.s.detached.add() {
		return false // the server is closing: the stream says goodbye where it is
	}
	conn, brw, err := ss.rc.Hijack() // flushes what net/http holds
	if err != nil {
		ss.s.detached.done()
		return false
	}
	// From here the stream's context ends only with the stream: the
	// handler's return cancels the request's. A client that sent more than
	// its GET (a pipelined request) is not served further: brw is dropped.
	_ = brw
	ss.d.unhook()
	ss.conn, ss.w, ss.rc, ss.deadline = conn, nil, nil, time.Time{}
	if info, ok := ss.ctx.Value(logInfoKey{}).(*logInfo); ok {
		ss.info = info
		info.detach()
	}
	go watchLeave(conn, ss.d.cancel)
	go ss.serveDetached()
	return true
}

// serveDetached serves a detached stream to its end and closes its
// connection.
func (ss *sseStream) serveDetached() {
	defer ss.s.detached.done()
	defer func() {
		if p := recover(); p != nil {
			ss.s.log.ErrorContext(ss.ctx, "panic in a detached stream", "panic", p)
		}
		ss.close()
	}()
	ss.serve()
}

// watchLeave waits on conn until the client leaves or the stream closes
// the connection, then ends the stream's context. A client sends nothing
// more on a stream's connection; what it does send is dropped.
func watchLeave(conn net.Conn, cancel context.CancelFunc) {
	var b [1]byte
	for {
		if _, err := conn.Read(b[:]); err != nil {
			cancel()
			return
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

// closeConn ends a detached stream's body and closes its connection.
func (ss *sseStream) closeConn() {
	if !ss.broken {
		ss.writeConn([]byte("0\r\n\r\n")) // the body's last chunk
	}
	ss.conn.Close()
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

// detachedSet counts the streams served off net/http, so Close can wait for
// their goodbyes: http.Server.Shutdown knows them not. Once closed it
// takes no more: a stream that would detach then stays in its handler.
type detachedSet struct {
	mu     sync.Mutex
	n      int
	closed bool
	none   chan struct{} // closed when closed and n is 0
}

func (d *detachedSet) add() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.n++
	return true
}

func (d *detachedSet) done() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n--; d.n == 0 && d.closed {
		close(d.none)
	}
}

// close refuses further streams and waits for those detached to end.
func (d *detachedSet) close() {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		d.none = make(chan struct{})
		if d.n == 0 {
			close(d.none)
		}
	}
	none := d.none
	d.mu.Unlock()
	<-none
}
