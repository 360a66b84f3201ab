package sse

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want []string // type, then data, of each event
		done bool
	}{
		{"events", "data: a\n\ndata:b\n\n", []string{"", "a\n", "", "b\n"}, false},
		{"CRLF, comments, other fields", ": keep-alive\r\nevent: x\r\nid: 1\r\ndata: a\r\n\r\n", []string{"x", "a\n"}, false},
		{"a blank line without data forgets the type", "event: x\n\ndata: a\n\n", []string{"", "a\n"}, false},
		{"the last type line counts", "event: x\nevent:y\ndata: a\n\n", []string{"y", "a\n"}, false},
		{"multi-line data", "data: {\"a\":\ndata: 1}\n\n", []string{"", "{\"a\":\n1}\n"}, false},
		{"blank lines without data", "\n\n: c\n\ndata: a\n\n", []string{"", "a\n"}, false},
		{"only one space is dropped", "data:  a\n\n", []string{"", " a\n"}, false},
		{"data without colon", "data\n\n", []string{"", "\n"}, false},
		{"unterminated event dropped", "data: a\n\ndata: b\n", []string{"", "a\n"}, false},
		{"done", "data: a\n\ndata: [DONE]\n\n", []string{"", "a\n", "", "[DONE]\n"}, true},
		{"done without its blank line", "data: [DONE]", nil, true},
		{"done inside text is not done", "data: x data: [DONE]\n\n", []string{"", "x data: [DONE]\n"}, false},
		{"long line", "data: " + strings.Repeat("x", 10000) + "\n\n", []string{"", strings.Repeat("x", 10000) + "\n"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, body := range []struct {
				name string
				r    io.Reader
			}{
				// One byte per read: every line crosses reads.
				{"one byte per read", &oneByteReader{strings.NewReader(tt.body)}},
				// A body that lends its buffer, three bytes at a time.
				{"lent buffer", &lender{body: tt.body, step: 3}},
				{"lent buffer, whole", &lender{body: tt.body, step: len(tt.body)}},
			} {
				e := NewReader(body.r)
				var got []string
				for {
					typ, data, err := e.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, string(typ), string(data))
				}
				if !reflect.DeepEqual(got, tt.want) || e.Done() != tt.done {
					t.Errorf("%s: events %q done %v, want %q %v", body.name, got, e.Done(), tt.want, tt.done)
				}
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		t.Parallel()
		e := NewReader(io.MultiReader(strings.NewReader("data: "), zeros{}))
		if _, _, err := e.Next(); !errors.Is(err, ErrTooLarge) {
			t.Errorf("err %v, want ErrTooLarge", err)
		}
	})
}

// lender is a Source that lends a buffer of step bytes at most and
// overwrites what was discarded, so that a byte used after its Discard
// shows in the events read.
type lender struct {
	body string
	step int
	buf  []byte
}

func (l *lender) Read([]byte) (int, error) { panic("a Source is read through Peek") }

func (l *lender) Peek() ([]byte, error) {
	if len(l.buf) == 0 {
		if l.body == "" {
			return nil, io.EOF
		}
		n := min(l.step, len(l.body))
		l.buf, l.body = []byte(l.body[:n]), l.body[n:]
	}
	return l.buf, nil
}

func (l *lender) Discard(n int) {
	for i := range l.buf[:n] {
		l.buf[i] = '#'
	}
	l.buf = l.buf[n:]
}

type oneByteReader struct{ r io.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 1)]) }

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// gated is a body that delivers its parts one Read at a time, each part
// whole if the caller's buffer takes it, as a connection delivers a token.
type gated struct{ parts []string }

func (g *gated) Read(p []byte) (int, error) {
	if len(g.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, g.parts[0])
	if g.parts[0] = g.parts[0][n:]; g.parts[0] == "" {
		g.parts = g.parts[1:]
	}
	return n, nil
}

// TestReaderHoldsNoBufferBetweenEvents: a stream waits for its next event
// with no buffer; one that came in with the last stays buffered.
func TestReaderHoldsNoBufferBetweenEvents(t *testing.T) {
	t.Parallel()
	e := NewReader(&gated{parts: []string{"data: a\n\n", "data: b\n\ndata: c\n", "\n", strings.Repeat("x", 3000) + "\n\n"}})
	for i, want := range []struct {
		data string
		held bool
	}{{"a\n", false}, {"b\n", true}, {"c\n", false}} {
		_, data, err := e.Next()
		if string(data) != want.data || err != nil {
			t.Fatalf("event %d: %q, %v; want %q", i, data, err, want.data)
		}
		if held := e.own.r != nil; held != want.held {
			t.Errorf("event %d: buffer held %v, want %v", i, held, want.held)
		}
	}
	if _, _, err := e.Next(); err != io.EOF || e.own.r != nil {
		t.Errorf("at the end: %v, buffer held %v; want io.EOF and none", err, e.own.r != nil)
	}
}
