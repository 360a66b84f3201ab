package transport_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentchat/agentchat/internal/llm/transport"
)

// TestMain fails the package if a test leaves a goroutine behind: the
// transport starts none, so any left is a connection or body not released.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is an httptest server that counts the connections it accepted.
type server struct {
	*httptest.Server
	conns atomic.Int32
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	return newWatchedServer(t, h, http.StateNew, nil)
}

// newWatchedServer is newServer that also signals each time one of its
// connections enters state (StateIdle: a response was written to its end),
// where signal is not nil.
func newWatchedServer(t *testing.T, h http.HandlerFunc, state http.ConnState, signal chan<- struct{}) *server {
	t.Helper()
	s := &server{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
		if st == state && signal != nil {
			signal <- struct{}{}
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// readToDone reads body's lines up to its end marker, data: [DONE], and
// no further.
func readToDone(t *testing.T, body io.Reader) {
	t.Helper()
	br := bufio.NewReader(body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if line == "data: [DONE]\n" {
			return
		}
	}
}

func newClient(t *testing.T, std *http.Transport) *http.Client {
	t.Helper()
	tr := transport.New(std)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// post sends a small JSON body, as the adapters do; a transport error
// fails the test.
func post(t *testing.T, c *http.Client, ctx context.Context, url string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"q":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

// streaming answers with one chunk, flushed, and then waits for release
// (or the client's going away) before the rest.
func streaming(release <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
			io.WriteString(w, "data: two\n\n")
		case <-r.Context().Done():
		}
	}
}

func TestKeepAlive(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		h    http.HandlerFunc
	}{
		{"content-length", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			w.Write(b)
		}},
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Write(b[:3])
			w.(http.Flusher).Flush()
			w.Write(b[3:])
		}},
		{"no body", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusNoContent)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tt.h)
			c := newClient(t, &http.Transport{})
			for i := range 3 {
				resp := post(t, c, t.Context(), srv.URL)
				if resp.Request == nil || resp.Request.Body != nil || resp.Request.GetBody != nil {
					t.Errorf("resp.Request keeps the request's body")
				}
				want := `{"q":1}`
				if resp.StatusCode == http.StatusNoContent {
					want = ""
				}
				if got := readAll(t, resp); got != want {
					t.Errorf("request %d: body %q, want %q", i, got, want)
				}
			}
			if n := srv.conns.Load(); n != 1 {
				t.Errorf("%d connections for three requests in a row, want 1", n)
			}
		})
	}
}

func TestBodyClosedMidStreamClosesItsConnection(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	gone := make(chan struct{}, 1)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streaming(release)(w, r)
		if r.Context().Err() != nil {
			gone <- struct{}{}
		}
	})
	c := newClient(t, &http.Transport{})
	resp := post(t, c, t.Context(), srv.URL)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: one\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	resp.Body.Close()
	<-gone // the server saw the connection close
	if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
		t.Error("Read after Close succeeded")
	}
	// The next request needs a new connection.
	go func() { release <- struct{}{} }()
	if got := readAll(t, post(t, c, t.Context(), srv.URL)); got != "data: one\n\ndata: two\n\n" {
		t.Errorf("second request: %q", got)
	}
	if n := srv.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// TestBodyClosedAtItsEndMarkerKeepsItsConnection: a stream's reader stops
// at its end marker and closes the body before reading the body's own end;
// when that end has come in, the connection serves the next request.
func TestBodyClosedAtItsEndMarkerKeepsItsConnection(t *testing.T) {
	t.Parallel()
	idle := make(chan struct{}, 1)
	s := newWatchedServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "data: [DONE]\n\n")
	}, http.StateIdle, idle)
	c := newClient(t, &http.Transport{})
	for range 2 {
		resp := post(t, c, t.Context(), s.URL)
		readToDone(t, resp.Body)
		<-idle
		resp.Body.Close()
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestBodyClosedAtItsEndMarkerBeforeItsEnd: a body closed at its end
// marker (CloseAtEnd) before the body's own end has come in keeps its
// connection; the next request reads that end first. A connection whose
// server sent more than the end, and not the end, is not used again.
func TestBodyClosedAtItsEndMarkerBeforeItsEnd(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		more  bool // the server goes on after the end marker instead of ending
		conns int32
	}{
		{"the end comes", false, 1},
		{"more comes", true, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			sent := make(chan struct{}, 2) // the first answer's rest is on its way
			idle := make(chan struct{}, 2)
			first := true
			s := newWatchedServer(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				io.WriteString(w, "data: one\n\ndata: [DONE]\n\n")
				w.(http.Flusher).Flush()
				if !first {
					return
				}
				first = false
				<-release
				if tt.more {
					io.WriteString(w, "data: more\n\n")
					w.(http.Flusher).Flush()
					sent <- struct{}{}
					<-r.Context().Done() // the client closes the connection
				}
			}, http.StateIdle, idle)
			c := newClient(t, &http.Transport{})
			resp := post(t, c, t.Context(), s.URL)
			readToDone(t, resp.Body)
			b, ok := resp.Body.(interface{ CloseAtEnd() error })
			if !ok {
				t.Fatalf("the body (%T) has no CloseAtEnd", resp.Body)
			}
			b.CloseAtEnd()
			if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
				t.Error("Read after CloseAtEnd succeeded")
			}
			close(release)
			if tt.more {
				<-sent
			} else {
				<-idle
			}
			if got := readAll(t, post(t, c, t.Context(), s.URL)); got != "data: one\n\ndata: [DONE]\n\n" {
				t.Errorf("second request: %q", got)
			}
			if n := s.conns.Load(); n != tt.conns {
				t.Errorf("%d connections, want %d", n, tt.conns)
			}
		})
	}
}

// TestRequestInOneWrite: a request's head and its body leave in one write,
// also when net/http does not know the body to be in memory (the SDKs wrap
// theirs), so the server reads them in one segment.
func TestRequestInOneWrite(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	})
	var writes atomic.Int32
	c := newClient(t, &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return countingConn{nc, &writes}, err
	}})
	const body = `{"q":1}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, unknownReader{strings.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != body {
		t.Errorf("body %q, want %q", got, body)
	}
	if n := writes.Load(); n != 1 {
		t.Errorf("the request took %d writes, want 1", n)
	}
}

// countingConn counts its writes.
type countingConn struct {
	net.Conn
	writes *atomic.Int32
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// unknownReader is a reader net/http does not know to be in memory.
type unknownReader struct{ io.Reader }

func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	gone := make(chan struct{}, 1)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		streaming(release)(w, r)
		gone <- struct{}{}
	})
	c := newClient(t, &http.Transport{})
	ctx, cancel := context.WithCancel(t.Context())
	resp := post(t, c, ctx, srv.URL)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: one\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	// The blank line is in the buffer; the next read waits on the network.
	br.ReadString('\n')
	read := make(chan error, 1)
	go func() {
		_, err := br.ReadString('\n')
		read <- err
	}()
	cancel()
	if err := <-read; !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v, want context.Canceled", err)
	}
	<-gone
}

func TestCancelWhileWaitingForTheAnswer(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the server notices a close only after the body
		close(arrived)
		<-r.Context().Done()
	})
	c := newClient(t, &http.Transport{})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-arrived
		cancel()
	}()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("x"))
	if _, err := c.Do(req); !errors.Is(err, context.Canceled) {
		t.Errorf("Do: %v, want context.Canceled", err)
	}
}

func TestServerClosesTheConnection(t *testing.T) {
	t.Parallel()
	t.Run("Connection: close", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			io.WriteString(w, "ok")
		})
		c := newClient(t, &http.Transport{})
		for range 2 {
			if got := readAll(t, post(t, c, t.Context(), srv.URL)); got != "ok" {
				t.Errorf("body %q", got)
			}
		}
		if n := srv.conns.Load(); n != 2 {
			t.Errorf("%d connections, want 2", n)
		}
	})
	t.Run("while idle", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
		c := newClient(t, &http.Transport{})
		readAll(t, post(t, c, t.Context(), srv.URL))
		srv.CloseClientConnections()
		// The idle connection is looked at before it is used.
		if got := readAll(t, post(t, c, t.Context(), srv.URL)); got != "ok" {
			t.Errorf("body %q", got)
		}
	})
	t.Run("mid-stream", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "short")
			w.(http.Flusher).Flush()
			c, _, _ := http.NewResponseController(w).Hijack()
			c.Close()
		})
		c := newClient(t, &http.Transport{})
		resp := post(t, c, t.Context(), srv.URL)
		if _, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("read: %v, want io.ErrUnexpectedEOF", err)
		}
		resp.Body.Close()
	})
}

// TestIdleConnectionExpires: an idle connection is closed after
// IdleConnTimeout, by a timer (no goroutine watches it).
func TestIdleConnectionExpires(t *testing.T) {
	t.Parallel()
	closed := make(chan struct{}, 1)
	s := newWatchedServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}, http.StateClosed, closed)
	c := newClient(t, &http.Transport{IdleConnTimeout: time.Millisecond})
	readAll(t, post(t, c, t.Context(), s.URL))
	<-closed // the transport closed the idle connection
	if got := readAll(t, post(t, c, t.Context(), s.URL)); got != "ok" {
		t.Errorf("body %q", got)
	}
	if n := s.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// TestResendOnAKeptConnectionClosedUnanswered: a server that closes a
// kept-alive connection on reading the next request (its idle timeout
// crossing the request) gets the request again on a new connection.
func TestResendOnAKeptConnectionClosedUnanswered(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var bodies atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 2; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			for answered := 0; ; answered++ {
				req, err := http.ReadRequest(br)
				if err != nil {
					break
				}
				if b, _ := io.ReadAll(req.Body); string(b) == `{"q":1}` {
					bodies.Add(1)
				}
				if i == 0 && answered == 1 {
					break // the first connection answers one request only
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
			c.Close()
		}
	}()
	c := newClient(t, &http.Transport{})
	for i := range 3 {
		if got := readAll(t, post(t, c, t.Context(), "http://"+ln.Addr().String())); got != "ok" {
			t.Errorf("request %d: %q", i, got)
		}
	}
	c.CloseIdleConnections()
	ln.Close()
	<-done
	if n := bodies.Load(); n != 4 {
		t.Errorf("the server read %d request bodies, want 4 (one resent whole)", n)
	}
}

func TestMaxConnsPerHost(t *testing.T) {
	t.Parallel()
	// Each request's answer ends when its own channel is closed.
	var mu sync.Mutex
	release := map[string]chan struct{}{}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ch := release[r.URL.Path]
		mu.Unlock()
		streaming(ch)(w, r)
	})
	for _, p := range []string{"/a", "/b", "/c", "/d"} {
		release[p] = make(chan struct{})
	}
	defer close(release["/b"])
	c := newClient(t, &http.Transport{MaxConnsPerHost: 2})
	a := post(t, c, t.Context(), srv.URL+"/a")
	b := post(t, c, t.Context(), srv.URL+"/b")
	defer b.Body.Close()

	// A third call waits for a connection: cancelled, it fails with its
	// context's error, having opened none.
	ctx, cancel := context.WithCancel(t.Context())
	waited := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/c", strings.NewReader("x"))
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		waited <- err
	}()
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Errorf("third call: %v, want context.Canceled", err)
	}

	// Once a's answer has ended, its connection serves the next call.
	next := make(chan *http.Response, 1)
	go func() { next <- post(t, c, t.Context(), srv.URL+"/d") }()
	close(release["/a"])
	if got := readAll(t, a); got != "data: one\n\ndata: two\n\n" {
		t.Errorf("a: %q", got)
	}
	d := <-next
	close(release["/d"])
	readAll(t, d)
	if n := srv.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestErrorStatusKeepsItsBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		http.Error(w, `{"error":{"message":"slow down"}}`, http.StatusTooManyRequests)
	})
	c := newClient(t, &http.Transport{})
	resp := post(t, c, t.Context(), srv.URL)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got := readAll(t, resp); !strings.Contains(got, "slow down") {
		t.Errorf("body %q", got)
	}
	readAll(t, post(t, c, t.Context(), srv.URL))
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestHTTPS: https goes to the standard transport, which speaks HTTP/2 to
// a server that offers it.
func TestHTTPS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	std := srv.Client().Transport.(*http.Transport).Clone()
	std.ForceAttemptHTTP2 = true
	c := newClient(t, std)
	for range 2 {
		if got := readAll(t, post(t, c, t.Context(), srv.URL)); got != "HTTP/2.0" {
			t.Errorf("served over %q, want HTTP/2.0", got)
		}
	}
}

// TestFallback: what the transport does not serve goes to the standard
// transport, with its settings.
func TestFallback(t *testing.T) {
	t.Parallel()
	t.Run("a proxy", func(t *testing.T) {
		t.Parallel()
		var proxied atomic.Int32
		proxy := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.IsAbs() {
				proxied.Add(1)
			}
			io.WriteString(w, "via proxy")
		})
		pu, _ := url.Parse(proxy.URL)
		c := newClient(t, &http.Transport{Proxy: http.ProxyURL(pu)})
		if got := readAll(t, post(t, c, t.Context(), "http://upstream.invalid/v1")); got != "via proxy" || proxied.Load() != 1 {
			t.Errorf("body %q, proxied %d", got, proxied.Load())
		}
	})
}
