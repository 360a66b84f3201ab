// Package transport is the HTTP transport of the provider adapters: an
// http.RoundTripper for HTTP/1.1 that holds no goroutine per connection.
//
// The standard http.Transport runs two goroutines for each HTTP/1.1
// connection (a reader and a writer) for as long as the connection lives,
// and keeps the request, its body included, until the response's body
// ends. A provider call streams its answer for the whole of a run, so at a
// thousand runs that is two thousand parked goroutines and a thousand
// request bodies (docs/benchmarks.md, issue 25). Here a request's start
// (a dial if one is needed, Request.Write through a pooled buffer, the
// response's head by http.ReadResponse) runs on a goroutine that ends with
// it, and the body, chunked decoding and all, is read on the caller's
// goroutine as it reads resp.Body. Nothing waits on a connection that no
// caller is using.
//
// Connections are kept per host (scheme and address) and bounded as the
// standard transport bounds them: MaxConnsPerHost counts the open ones,
// in use or idle, and a call beyond waits for one. A connection goes back
// to the pool only when its response's body was read to its end, or was
// closed at its answer's end marker (CloseAtEnd: the next request on it
// reads the body's own end first), and both sides keep it alive; a body
// closed before its end (unless the rest has already come in), a read
// error or a cancelled context closes it.
// Cancelling the request's context closes the connection
// (context.AfterFunc), which ends a read in progress. An idle connection
// is looked at before it is reused (the server may have closed it), and a
// kept connection that closes before any byte of an answer gets the
// request once more on a new one.
//
// It serves cleartext http only: a gateway or model server beside the
// replica (vLLM, Ollama, LiteLLM, the bench's fake provider). The rest it
// hands to the standard transport it was built from, whose settings it
// shares: https, where the standard transport speaks HTTP/2 to providers
// that offer it (one connection, its buffers and its TLS state, carries
// many runs' streams, which HTTP/1.1 over TLS, a connection per run, would
// not); a request the environment's proxy applies to; one that asks for an
// upgrade or for 100-continue.
//
// Invariants:
//   - No goroutine lives as long as a connection or a response's body: a
//     request's start, a context's AfterFunc and an idle connection's
//     timer run briefly and end.
//   - A connection is used by one request at a time, and a connection in
//     the pool has no response left to read but, after CloseAtEnd, the
//     last body's own end (conn.tail), which its next request reads first.
//   - The response keeps no reference to the request's body: resp.Request
//     is a copy without it.
package transport

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// Transport is an http.RoundTripper for HTTP/1.1 calls to providers. It is
// safe for concurrent use.
type Transport struct {
	std         *http.Transport
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	maxConns    int // per host; 0: no bound
	maxIdle     int // per host
	idleTimeout time.Duration
	readBuffer  int
	readers     sync.Pool // *bufio.Reader of readBuffer bytes, for a response's head
	bufs        sync.Pool // *[]byte of readBuffer bytes, for a chunked body (chunked)

	mu    sync.Mutex
	hosts map[string]*host
}

// New returns a Transport that hands what it does not serve to std and
// takes these of its settings: Proxy, DialContext, MaxConnsPerHost, MaxIdleConnsPerHost,
// IdleConnTimeout, DisableKeepAlives, ReadBufferSize.
func New(std *http.Transport) *Transport {
	t := &Transport{
		std:         std,
		dial:        std.DialContext,
		maxConns:    std.MaxConnsPerHost,
		maxIdle:     cmp.Or(std.MaxIdleConnsPerHost, http.DefaultMaxIdleConnsPerHost),
		idleTimeout: std.IdleConnTimeout,
		readBuffer:  cmp.Or(std.ReadBufferSize, 4<<10),
		hosts:       map[string]*host{},
	}
	t.bufs.New = func() any {
		b := make([]byte, t.readBuffer)
		return &b
	}
	if std.DisableKeepAlives {
		t.maxIdle = 0
	}
	if t.dial == nil {
		// As http.DefaultTransport dials.
		t.dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	return t
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	h := t.host(req)
	if h == nil {
		return t.std.RoundTrip(req)
	}
	// The request's start (a dial, the write, the response's head) runs on
	// a goroutine of its own that ends with it; the body is read on the
	// caller's. A provider call starts deep in a run's stack (~13 KiB in
	// use), and dialling or writing there took it past 16 KiB: the runtime
	// doubled the run goroutine's stack to 32 KiB and, as it waits on the
	// body at ~11.5 KiB, never halved it again (docs/benchmarks.md, issue
	// 25, sixth round).
	done := make(chan started, 1)
	go func() {
		resp, err := t.start(h, req)
		done <- started{resp, err}
	}()
	s := <-done
	return s.resp, s.err
}

type started struct {
	resp *http.Response
	err  error
}

// start sends req to h and reads the response's head.
func (t *Transport) start(h *host, req *http.Request) (*http.Response, error) {
	for retried := false; ; retried = true {
		c, err := h.get(req.Context())
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := c.roundTrip(req)
		if err == nil {
			return resp, nil
		}
		// A kept-alive connection the server closed before answering (it
		// closed it as idle while the request was on its way) tells nothing
		// about the request: send it once more, on a new connection, if
		// its body can be sent again. The standard transport does the same
		// for the requests it may replay; this one also replays a POST,
		// which llm.WithRetry would resend anyway, only later.
		var nr *notAnswered
		if retried || !errors.As(err, &nr) || !c.reused || req.Context().Err() != nil {
			return nil, err
		}
		if req, err = rewind(req); err != nil {
			return nil, err
		}
	}
}

// CloseIdleConnections closes the connections no request is using, here
// and in the standard transport.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	hosts := make([]*host, 0, len(t.hosts))
	for _, h := range t.hosts {
		hosts = append(hosts, h)
	}
	t.mu.Unlock()
	for _, h := range hosts {
		h.closeIdle()
	}
	t.std.CloseIdleConnections()
}

// host returns the pool for req's host, nil if req is for the standard
// transport.
func (t *Transport) host(req *http.Request) *host {
	u := req.URL
	if u == nil || u.Host == "" || u.Scheme != "http" ||
		req.Header.Get("Upgrade") != "" || req.Header.Get("Expect") != "" {
		return nil
	}
	if t.std.Proxy != nil {
		if p, err := t.std.Proxy(req); err != nil || p != nil {
			return nil // the standard transport reports a proxy's error
		}
	}
	addr := net.JoinHostPort(u.Hostname(), cmp.Or(u.Port(), "80"))
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hosts[addr]
	if h == nil {
		h = &host{t: t, addr: addr}
		t.hosts[addr] = h
	}
	return h
}

// closeBody closes a request's body that will not be sent, as a
// RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// rewind returns req with a fresh body, for sending it again.
func rewind(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("transport: cannot resend a request without GetBody")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := *req
	r.Body = body
	return &r, nil
}

// writers are the buffers requests are written through: a connection
// needs one only while it writes, so they are shared.
var writers sync.Pool // *bufio.Writer

func getWriter(c net.Conn) *bufio.Writer {
	if w, ok := writers.Get().(*bufio.Writer); ok {
		w.Reset(c)
		return w
	}
	return bufio.NewWriterSize(c, 4<<10)
}

func putWriter(w *bufio.Writer) {
	w.Reset(nil)
	writers.Put(w)
}

// oneWrite is the buffer a request is written through, so that its head
// and a small body leave in one write. Through a *bufio.Writer itself,
// Request.Write flushes the head alone before any body it does not know
// to be in memory, and the SDKs wrap every body (openai-go in a
// close-once reader): two segments, and the provider's server woken for
// the head, then again for the body (docs/benchmarks.md, issue 25,
// twelfth round). A body larger than the buffer still goes out as the
// buffer fills; one of unknown length is written through the
// *bufio.Writer, which net/http flushes after each chunk.
type oneWrite struct{ *bufio.Writer }

// getReader returns a buffer to read a response from c. A connection
// holds one only while a response is read: an idle one has nothing to read.
func (t *Transport) getReader(c net.Conn) *bufio.Reader {
	if r, ok := t.readers.Get().(*bufio.Reader); ok {
		r.Reset(c)
		return r
	}
	return bufio.NewReaderSize(c, t.readBuffer)
}

func (t *Transport) putReader(r *bufio.Reader) {
	r.Reset(nil)
	t.readers.Put(r)
}
