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
	// r is a pooled buffer over first and the body, held only while it
	// has bytes not yet read: between events a stream waits for the next
	// one in a one-byte read of the body (first), with no buffer, and a
	// thousand streams waiting for their next token hold none.
	r     *bufio.Reader
	first first
	typ   []byte // the event's type; reused
	data  []byte // the event's data; reused
	long  []byte // a line longer than r's buffer; reused
	done  bool
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

// bufferSize is a Reader's buffer: a few events of a token each. The body
// it reads is buffered already (the HTTP transport's reader holds what the
// connection delivered); a longer line is gathered in long.
const bufferSize = 1 << 10

// buffers are the Readers' buffers, shared: a stream holds one only while
// an event it received is being read.
var buffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufferSize) }}

// NewReader returns a Reader of body.
func NewReader(body io.Reader) *Reader {
	return &Reader{first: first{body: body}}
}

// take waits for the body's next byte without a buffer and then takes one.
func (e *Reader) take() error {
	for empty := 0; ; empty++ {
		n, err := e.first.body.Read(e.first.b[:])
		if n == 1 {
			e.first.has, e.first.err = true, err
			break
		}
		if err != nil {
			return err
		}
		if empty == 100 { // as bufio gives up on a reader that returns nothing
			return io.ErrNoProgress
		}
	}
	e.r = buffers.Get().(*bufio.Reader)
	e.r.Reset(&e.first)
	return nil
}

// give gives the buffer back if everything in it was read.
func (e *Reader) give() {
	if e.r != nil && e.r.Buffered() == 0 && !e.first.has && e.first.err == nil {
		e.r.Reset(nil)
		buffers.Put(e.r)
		e.r = nil
	}
}

// Done reports whether a data: [DONE] line was read.
func (e *Reader) Done() bool { return e.done }

// Next returns the type (empty if the event named none) and the data of
// the next event, both valid until the following call, or the error that
// ended the body (io.EOF at its clean end, ErrTooLarge).
func (e *Reader) Next() (typ, data []byte, err error) {
	e.typ, e.data = e.typ[:0], e.data[:0]
	if e.r == nil {
		if err := e.take(); err != nil {
			return nil, nil, err
		}
	}
	defer e.give()
	for {
		line, err := e.line()
		if len(line) == 0 && err != nil {
			return nil, nil, err
		}
		if len(line) == 0 {
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
		if err != nil {
			return nil, nil, err
		}
	}
}

// line reads one line without its line ending. At the end of the body it
// returns the unterminated rest, if any, with the error.
func (e *Reader) line() ([]byte, error) {
	line, err := e.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		e.long = append(e.long[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(e.long) >= MaxEvent {
				return nil, ErrTooLarge
			}
			line, err = e.r.ReadSlice('\n')
			e.long = append(e.long, line...)
		}
		line = e.long
	}
	if err == nil {
		line = line[:len(line)-1] // the LF
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, err
}
