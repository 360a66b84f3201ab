package transport

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

func testPool() *sync.Pool {
	return &sync.Pool{New: func() any { b := make([]byte, 64); return &b }}
}

// TestChunkedFraming reads bodies written whole and a byte at a time.
func TestChunkedFraming(t *testing.T) {
	cases := []struct {
		name, in, want string
		err            error
		rest           bool // bytes past the body's end stay buffered
	}{
		{name: "chunks", in: "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", want: "hello world"},
		{name: "extensions, upper-case hex", in: "5;a=b\r\nhello\r\nB ; x\r\n, world! ok\r\n0\r\n\r\n", want: "hello, world! ok"},
		{name: "bare LF", in: "3\nabc\n0\n\n", want: "abc"},
		{name: "trailers dropped", in: "3\r\nabc\r\n0\r\nX-T: 1\r\nY: 2\r\n\r\n", want: "abc"},
		{name: "bytes past the end", in: "1\r\na\r\n0\r\n\r\nHTTP/1.1", want: "a", rest: true},
		{name: "bad size", in: "zz\r\nab\r\n", err: errChunkSize},
		{name: "no size", in: "\r\n", err: errChunkSize},
		{name: "no CRLF after the data", in: "3\r\nabcX\r\n0\r\n\r\n", want: "abc", err: errChunkEnd},
		{name: "cut in the data", in: "5\r\nhel", want: "hel", err: io.ErrUnexpectedEOF},
		{name: "cut before the last chunk", in: "1\r\na\r\n", want: "a", err: io.ErrUnexpectedEOF},
		{name: "size line too long", in: "1" + string(make([]byte, 80)), err: errLongLine},
	}
	for _, tc := range cases {
		for _, split := range []bool{false, true} {
			t.Run(tc.name, func(t *testing.T) {
				client, server := net.Pipe()
				defer client.Close()
				go func() {
					if split {
						for i := range len(tc.in) {
							if _, err := server.Write([]byte{tc.in[i]}); err != nil {
								return
							}
						}
					} else {
						server.Write([]byte(tc.in))
					}
					server.Close()
				}()
				c := newChunked(client, testPool(), nil)
				got, err := io.ReadAll(c)
				if string(got) != tc.want || !errors.Is(err, tc.err) {
					t.Errorf("split %v: read %q, %v; want %q, %v", split, got, err, tc.want, tc.err)
				}
				if tc.err == nil && !split && c.buffered() != tc.rest {
					t.Errorf("buffered() = %v, want %v", c.buffered(), tc.rest)
				}
			})
			t.Run(tc.name+"/peek", func(t *testing.T) {
				client, server := net.Pipe()
				defer client.Close()
				go func() {
					if split {
						for i := range len(tc.in) {
							if _, err := server.Write([]byte{tc.in[i]}); err != nil {
								return
							}
						}
					} else {
						server.Write([]byte(tc.in))
					}
					server.Close()
				}()
				c := newChunked(client, testPool(), nil)
				got, err := peekAll(c)
				if string(got) != tc.want || !errors.Is(err, tc.err) {
					t.Errorf("split %v: peeked %q, %v; want %q, %v", split, got, err, tc.want, tc.err)
				}
				if tc.err == nil && !split && c.buffered() != tc.rest {
					t.Errorf("buffered() = %v, want %v", c.buffered(), tc.rest)
				}
			})
		}
	}
}

// peekAll reads c to its end through Peek and Discard, two bytes at a
// time, as a parser that stops mid-chunk does.
func peekAll(c *chunked) ([]byte, error) {
	var out []byte
	for {
		b, err := c.Peek()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if len(b) == 0 {
			return out, errors.New("Peek returned neither bytes nor an error")
		}
		n := min(len(b), 2)
		out = append(out, b[:n]...)
		c.Discard(n)
	}
}

// TestChunkedHoldsNoBufferWhileItWaits: once a read delivered what came
// in, the buffer is given back, and the next read waits without one.
func TestChunkedHoldsNoBufferWhileItWaits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if readable(client) == nil {
		t.Skip("no wait for readability on this system")
	}

	c := newChunked(client, testPool(), []byte("5\r\nhel"))
	p := make([]byte, 16)
	if n, err := c.Read(p); string(p[:n]) != "hel" || err != nil {
		t.Fatalf("first read %q, %v", p[:n], err)
	}
	if c.buf != nil {
		t.Fatal("the buffer is held after its bytes were read")
	}
	server.Write([]byte("lo\r\n"))
	if n, err := c.Read(p); string(p[:n]) != "lo" || err != nil {
		t.Fatalf("second read %q, %v", p[:n], err)
	}
	// The next read waits for the server, holding no buffer; the write
	// below comes while it waits or before, either way it is read.
	got := make(chan string)
	go func() {
		b, err := io.ReadAll(c)
		if err != nil {
			b = append(b, err.Error()...)
		}
		got <- string(b)
	}()
	server.Write([]byte("6\r\n world\r\n0\r\n\r\n"))
	if s := <-got; s != " world" {
		t.Fatalf("read %q after the wait, want %q", s, " world")
	}
	if c.buf != nil {
		t.Fatal("the buffer is held at the body's end")
	}
}

// TestChunkedPeekHoldsNoBufferWhileItWaits: once the bytes Peek lent were
// discarded, the chunk's CRLF with them, the buffer is given back.
func TestChunkedPeekHoldsNoBufferWhileItWaits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if readable(client) == nil {
		t.Skip("no wait for readability on this system")
	}

	c := newChunked(client, testPool(), []byte("5\r\nhello\r\n3\r\nab"))
	for _, want := range []string{"hello", "ab"} {
		b, err := c.Peek()
		if string(b) != want || err != nil {
			t.Fatalf("peeked %q, %v; want %q", b, err, want)
		}
		if c.buf == nil {
			t.Fatal("no buffer held under the bytes lent")
		}
		c.Discard(len(b))
	}
	if c.buf != nil {
		t.Fatal("the buffer is held after its bytes were discarded")
	}
	got := make(chan string)
	go func() {
		b, err := peekAll(c)
		if err != nil {
			b = append(b, err.Error()...)
		}
		got <- string(b)
	}()
	server.Write([]byte("c\r\n0\r\n\r\n"))
	if s := <-got; s != "c" {
		t.Fatalf("peeked %q after the wait, want %q", s, "c")
	}
	if c.buf != nil {
		t.Fatal("the buffer is held at the body's end")
	}
}
