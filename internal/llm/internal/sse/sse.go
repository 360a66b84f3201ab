// Package sse reads text/event-stream bodies for the provider adapters,
// without allocating per event: an event's type and data are valid until
// the next call to Next.
//
// It reads as the provider SDKs' own decoders do: lines end in LF (a CR
// before it is dropped); a blank line dispatches the event if it has data;
// the values of its data lines are joined, each followed by a newline; the
// event line names it; comments and other fields are ignored. An event not
// ended by a blank line when the body ends is dropped.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// MaxEvent bounds the data of one event, as the SDKs bound a line: a
// provider that never ends an event must not grow memory without limit.
const MaxEvent = 32 << 20

// ErrTooLarge is an event larger than MaxEvent.
var ErrTooLarge = errors.New("a stream event is larger than 32 MiB")

// Reader reads the events of one body. It also notes whether a data line
// was exactly [DONE], the OpenAI end marker: the body may stop right after
// that line, before its blank line.
type Reader struct {
	src  Source
	own  *buffered // src when the body lends no buffer of its own
	typ  []byte    // the event's type; reused
	data []byte    // the event's data; reused
	long []byte    // a line that crosses what src had at hand; reused
	done bool
}

// Source is a body that lends its read buffer: the provider transport's
// chunked body (llm/transport) is one. The events are parsed where the
// bytes lie, so each byte of a token is copied once after its read (into
// the event's data), and the buffer is the body's, held only while it has
// bytes not yet delivered.
type Source interface {
	// Peek returns the body's next bytes, reading them if none are at
	// hand; they are valid until Discard. It returns bytes or an error
	// (io.EOF at the body's end), never neither.
	Peek() ([]byte, error)
	// Discard drops the first n bytes Peek returned.
	Discard(n int)
}

// buffered is the Source over a body that lends no buffer: a pooled
// buffer over first and the body, held only while it has bytes not yet
// read. Between events a stream waits for the next one in a one-byte read
// of the body (first), with no buffer, and a thousand streams waiting for
// their next token hold none.
type buffered struct {
	r     *bufio.Reader
	first first
}

// first is the body after the byte that was read while no buffer was held.
type first struct {
	body io.Reader
	b    [1]byte
	has  bool  // b was not yet read
	err  error // the error that came with b, reported after it
}

func (f *first) Read(p []byte) (int, error) {
	if f.has {
		if len(p) == 0 {
			return 0, nil
		}
		p[0], f.has = f.b[0], false
		return 1, nil
	}
	if err := f.err; err != nil {
		f.err = nil
		return 0, err
	}
	return f.body.Read(p)
}

// bufferSize is a buffered's buffer: a few events of a token each. The
// body it reads is buffered already (the HTTP transport's reader holds what
// the connection delivered); a longer line is gathered in Reader.long.
const bufferSize = 1 << 10

// buffers are the buffereds' buffers, shared: a stream holds one only
// while an event it received is being read.
var buffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufferSize) }}

// NewReader returns a Reader of body, parsing in body's own buffer if it
// is a Source.
func NewReader(body io.Reader) *Reader {
	if src, ok := body.(Source); ok {
		return &Reader{src: src}
	}
	b := &buffered{first: first{body: body}}
	return &Reader{src: b, own: b}
}

// Peek waits for the body's next byte without a buffer, if none is held,
// and then returns what the buffer has.
func (b *buffered) Peek() ([]byte, error) {
	if b.r == nil {
		if err := b.take(); err != nil {
			return nil, err
		}
	}
	if b.r.Buffered() == 0 {
		if _, err := b.r.Peek(1); err != nil {
			return nil, err
		}
	}
	return b.r.Peek(b.r.Buffered())
}

func (b *buffered) Discard(n int) { b.r.Discard(n) }

// take waits for the body's next byte without a buffer and then takes one.
func (b *buffered) take() error {
	for empty := 0; ; empty++ {
		n, err := b.first.body.Read(b.first.b[:])
		if n == 1 {
			b.first.has, b.first.err = true, err
			break
		}
		if err != nil {
			return err
		}
		if empty == 100 { // as bufio gives up on a reader that returns nothing
			return io.ErrNoProgress
		}
	}
	b.r = buffers.Get().(*bufio.Reader)
	b.r.Reset(&b.first)
	return nil
}

// give gives the buffer back if everything in it was read.
func (b *buffered) give() {
	if b.r != nil && b.r.Buffered() == 0 && !b.first.has && b.first.err == nil {
		b.r.Reset(nil)
		buffers.Put(b.r)
		b.r = nil
	}
}

// Done reports whether a data: [DONE] line was read.
func (e *Reader) Done() bool { return e.done }

// Next returns the type (empty if the event named none) and the data of
// the next event, both valid until the following call, or the error that
// ended the body (io.EOF at its clean end, ErrTooLarge).
func (e *Reader) Next() (typ, data []byte, err error) {
	e.typ, e.data = e.typ[:0], e.data[:0]
	if e.own != nil {
		defer e.own.give()
	}
	for {
		line, n, err := e.line()
		if len(line) == 0 && err != nil {
			return nil, nil, err
		}
		if len(line) == 0 {
			e.src.Discard(n)
			if len(e.data) > 0 {
				return e.typ, e.data, nil
			}
			e.typ = e.typ[:0]
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "data":
			if string(value) == "[DONE]" {
				e.done = true
			}
			if len(e.data)+len(value) >= MaxEvent {
				return nil, nil, ErrTooLarge
			}
			e.data = append(e.data, value...)
			e.data = append(e.data, '\n')
		case "event":
			e.typ = append(e.typ[:0], value...)
		}
		// The line may lie in src's buffer: it is dropped once used.
		e.src.Discard(n)
		if err != nil {
			return nil, nil, err
		}
	}
}

// line returns one line without its line ending, and how many bytes of
// what src last peeked it still takes (to Discard once the line is used).
// At the end of the body it returns the unterminated rest, if any, with
// the error.
func (e *Reader) line() (line []byte, n int, err error) {
	e.long = e.long[:0]
	for {
		b, err := e.src.Peek()
		if len(b) == 0 {
			if err == nil {
				err = io.ErrNoProgress
			}
			return trimCR(e.long), 0, err
		}
		i := bytes.IndexByte(b, '\n')
		if i >= 0 && len(e.long) == 0 {
			return trimCR(b[:i]), i + 1, nil
		}
		if i >= 0 {
			e.long = append(e.long, b[:i]...)
			return trimCR(e.long), i + 1, nil
		}
		if len(e.long)+len(b) >= MaxEvent {
			return nil, 0, ErrTooLarge
		}
		e.long = append(e.long, b...)
		e.src.Discard(len(b))
	}
}

// trimCR drops a CR that ended a line.
func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}
