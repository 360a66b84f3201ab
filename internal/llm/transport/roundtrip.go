package transport

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// notAnswered is the error of a request on a connection that ended before
// any byte of an answer: the request may be sent again elsewhere.
type notAnswered struct{ err error }

func (e *notAnswered) Error() string { return e.err.Error() }
func (e *notAnswered) Unwrap() error { return e.err }

// roundTrip sends req over c and reads the response's head (on the
// request's start goroutine: see RoundTrip). On an error c is closed and
// its slot released.
func (c *conn) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	// Cancellation closes the connection, which ends the write or read in
	// progress; nothing waits for it meanwhile.
	stop := context.AfterFunc(ctx, func() { c.nc.Close() })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	w := getWriter(c.nc)
	var err error
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength > 0 {
		err = req.Write(oneWrite{w}) // closes req.Body
	} else {
		err = req.Write(w) // a body of unknown length: chunks flushed as they come
	}
	if err == nil {
		err = w.Flush()
	}
	putWriter(w)
	if err != nil {
		// As the standard transport does, an answer the server may have
		// sent before it stopped reading is not waited for: a request cut
		// short by its body's reader would leave the server waiting too.
		return fail(&notAnswered{err})
	}
	br := c.h.t.getReader(c.nc)
	if _, err := br.Peek(1); err != nil {
		c.h.t.putReader(br)
		return fail(&notAnswered{err})
	}
	var resp *http.Response
	for {
		var err error
		resp, err = http.ReadResponse(br, req)
		if err != nil {
			return fail(err)
		}
		// 1xx answers (103 Early Hints) come before the response, with no
		// body; 101 would switch protocols, which was not asked for.
		if resp.StatusCode >= 200 || resp.StatusCode < 100 {
			break
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return fail(errors.New("transport: unexpected 101 Switching Protocols"))
		}
	}
	// The response does not keep the request's body alive: it may be large,
	// and the response lives as long as its stream.
	r := *req
	r.Body, r.GetBody = nil, nil
	resp.Request = &r
	b := &body{c: c, br: br, rc: resp.Body, ctx: ctx, stop: stop,
		keep: !resp.Close && !req.Close && c.h.t.maxIdle > 0}
	if resp.Body == http.NoBody {
		b.end()
		return resp, nil
	}
	if len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked" && resp.Trailer == nil {
		// A stream: read without holding a buffer between its tokens
		// (chunked). What br read past the head goes with it. A response
		// that declares trailers keeps net/http's reader, which hands them
		// to resp.Trailer.
		rest, _ := br.Peek(br.Buffered())
		b.ch = newChunked(c.nc, &c.h.t.bufs, rest)
		b.rc, b.br = b.ch, nil
		c.h.t.putReader(br)
	}
	resp.Body = b
	return resp, nil
}

// close closes c and frees its slot.
func (c *conn) close() {
	c.nc.Close()
	c.h.release()
}

// body is a response's body, read on the caller's goroutine.
type body struct {
	c    *conn
	br   *bufio.Reader // nil for a chunked body, which reads through ch
	ch   *chunked      // a chunked body's reader, nil for others
	rc   io.Reader     // ch, or net/http's reader: framing, chunked decoding, trailers
	ctx  context.Context
	stop func() bool // stops the cancellation's AfterFunc
	keep bool        // the connection may serve another request after this one
	// done is set once the connection was given back or closed: by the
	// read that reached the end, or by Close, whichever comes first.
	done atomic.Bool
	// reading is held by a Read; Close reads the buffered rest of the body
	// only when it can take it (no Read on another goroutine).
	reading sync.Mutex
	// tailed is set when CloseAtEnd left the body's end to be read by the
	// connection's next request (conn.tail): the body reads nothing more.
	tailed bool
}

func (b *body) Read(p []byte) (int, error) {
	b.reading.Lock()
	defer b.reading.Unlock()
	if b.tailed {
		return 0, errClosedAtEnd
	}
	if b.done.Load() {
		// After the end net/http's reader answers io.EOF without reading;
		// after Close the connection is closed.
		return b.rc.Read(p)
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.end()
	case err != nil:
		if b.ctx.Err() != nil {
			err = b.ctx.Err()
		}
		b.abandon()
	}
	return n, err
}

// Close ends the body. One not read to its end closes its connection
// (net/http's reader would wait for the rest, and a stream's rest may never
// come) unless the rest is already at hand.
func (b *body) Close() error {
	if b.reading.TryLock() {
		defer b.reading.Unlock()
		if !b.done.Load() && b.readBuffered() {
			return nil
		}
	}
	b.abandon()
	return nil
}

// readBuffered reads the rest of the body if what the connection has
// received holds it, and then gives the connection back. A stream's reader
// stops at its end marker (data: [DONE], message_stop), just before the
// body's own end (a chunked body's last chunk), which has usually come in
// by then; without this every provider call would dial, and over TLS
// handshake, anew. It reads only once something has come in, and gives
// the rest a millisecond (a read deadline) to complete.
func (b *body) readBuffered() bool {
	if !readRest(b.c.nc, b.rc, b.buffered()) {
		return false
	}
	b.end()
	return true
}

// readRest reads rc, a body on nc, to its end if what nc has received
// (or rc has buffered) holds it, and reports whether it did.
func readRest(nc net.Conn, rc io.Reader, buffered bool) bool {
	if !buffered && !received(nc) {
		return false
	}
	if nc.SetReadDeadline(time.Now().Add(time.Millisecond)) != nil {
		return false
	}
	var buf [512]byte
	for n := 0; n < maxBuffered; {
		k, err := rc.Read(buf[:])
		n += k
		if err == io.EOF {
			return nc.SetReadDeadline(time.Time{}) == nil
		}
		if err != nil {
			return false
		}
	}
	return false
}

// errClosedAtEnd is a Read's error after CloseAtEnd.
var errClosedAtEnd = errors.New("transport: read after CloseAtEnd")

// CloseAtEnd closes a body whose reader stopped at the answer's end marker
// (data: [DONE], message_stop), so that what is left of it is the body's
// own end: a chunked body's last chunk. Close gives the connection back
// only when that end has come in already; on a busy machine it often has
// not (the server writes it after its handler returns), and the next call
// would dial anew (docs/benchmarks.md, issue 25, twelfth round). Here such
// a connection goes back to the pool with its body's end still to read:
// the next request on it reads that end first, and takes another
// connection if it has not come, or anything else came. Nothing waits
// meanwhile. A body not read to an end marker must be closed with Close,
// which closes its connection: the server may still be answering.
func (b *body) CloseAtEnd() error {
	if b.done.Load() {
		return nil
	}
	if b.reading.TryLock() {
		defer b.reading.Unlock()
		if b.buffered() || received(b.c.nc) {
			// Something has come in: the body's end, or the connection goes.
			if !b.readBuffered() {
				b.abandon()
			}
			return nil
		}
		if b.ch == nil || !b.keep || !b.done.CompareAndSwap(false, true) {
			b.abandon()
			return nil
		}
		if !b.stop() { // cancelled: the AfterFunc closes the connection
			b.c.close()
			return nil
		}
		b.tailed = true
		b.c.tail = b.ch
		b.c.h.put(b.c)
		return nil
	}
	b.abandon() // a Read on another goroutine: as Close
	return nil
}

// maxBuffered bounds what Close reads of a body's rest: more is an answer
// still coming, not its end.
const maxBuffered = 4 << 10

// end gives the connection back after the body's end, if both sides keep
// it and no cancellation closed it meanwhile, and closes it otherwise.
func (b *body) end() {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	keep := b.stop() && b.keep && !b.buffered() // more is an answer nobody asked for
	if b.br != nil {
		b.c.h.t.putReader(b.br)
		b.br = nil
	}
	if !keep {
		b.c.close()
		return
	}
	b.c.h.put(b.c)
}

// buffered reports whether bytes of the connection were read past what
// the body delivered.
func (b *body) buffered() bool {
	if b.ch != nil {
		return b.ch.buffered()
	}
	return b.br.Buffered() > 0
}

// abandon closes the connection of a body not read to its end. Its read
// buffer is left to the collector: a Read on another goroutine may still
// be using it.
func (b *body) abandon() {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	b.stop()
	b.c.close()
}
