// Package ssetest reads Server-Sent Events as a browser's EventSource does
// (the WHATWG parsing rules), so tests check streams the way clients see them:
// a live response body frame by frame (NewReader, ReadAll), or an encoder's
// whole output strictly (Parse). Only tests import it.
package ssetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

// Frame is one dispatched event, or a comment.
type Frame struct {
	ID      string // the id field of this frame ("" when it had none)
	Event   string // "message" when the frame named none
	Data    string // data lines joined by "\n"
	Retry   int    // a retry field, in ms
	Comment string // set on comment-only frames (": keep-alive")
	// HasID and HasEvent report that the frame carried the field, which
	// an empty ID (a reset of the client's Last-Event-ID) and Event's
	// default "message" would otherwise hide.
	HasID, HasEvent bool
}

// JSON decodes the frame's data into v, failing the test if it is not JSON.
func (f Frame) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(f.Data), v); err != nil {
		t.Fatalf("frame %q data is not JSON: %v\n%s", f.Event, err, f.Data)
	}
}

// Reader parses frames from a stream.
type Reader struct {
	sc     *bufio.Scanner
	strict bool // a line an EventSource ignores is an error
}

// NewReader reads frames from r.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	return &Reader{sc: sc}
}

// Next returns the next frame; io.EOF at the end of the stream.
func (r *Reader) Next() (Frame, error) {
	var f Frame
	var data []string
	seen := false
	for r.sc.Scan() {
		line := strings.TrimSuffix(r.sc.Text(), "\r")
		if line == "" {
			if len(data) > 0 || f.ID != "" || f.Event != "" {
				f.Data = strings.Join(data, "\n")
				if f.Event == "" {
					f.Event = "message"
				}
				return f, nil
			}
			if f.Comment != "" || f.Retry != 0 {
				return f, nil
			}
			seen = false
			continue
		}
		seen = true
		if c, ok := strings.CutPrefix(line, ":"); ok {
			f.Comment = strings.TrimPrefix(c, " ")
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			f.Event, f.HasEvent = value, true
		case "data":
			data = append(data, value)
		case "id":
			if !strings.ContainsRune(value, 0) {
				f.ID, f.HasID = value, true
			} else if r.strict {
				return f, fmt.Errorf("id with NUL: %q", line)
			}
		case "retry":
			if n, err := strconv.Atoi(value); err == nil {
				f.Retry = n
			} else if r.strict {
				return f, fmt.Errorf("retry not a number: %q", line)
			}
		default:
			if r.strict {
				return f, fmt.Errorf("unknown field: %q", line)
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		return f, err
	}
	if seen && (len(data) > 0 || r.strict) {
		return f, io.ErrUnexpectedEOF // a frame without its blank line: the stream was cut
	}
	return f, io.EOF
}

// ReadAll reads frames until the stream ends, skipping comments and retry hints.
func ReadAll(t testing.TB, r io.Reader) []Frame {
	t.Helper()
	var out []Frame
	rd := NewReader(r)
	for {
		f, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading SSE after %d frames: %v", len(out), err)
		}
		if f.Comment != "" || (f.Data == "" && f.Event == "") {
			continue
		}
		out = append(out, f)
	}
}

// Parse reads an encoder's whole output, comment frames included, and fails
// the test on a line an EventSource would ignore (an unknown field, an id
// with NUL, a retry that is not a number) or on a last frame without its
// blank line: in an encoder's output each is a bug a client would hide.
func Parse(t testing.TB, b []byte) []Frame {
	t.Helper()
	var out []Frame
	rd := NewReader(bytes.NewReader(b))
	rd.strict = true
	for {
		f, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("SSE frame %d: %v", len(out), err)
		}
		out = append(out, f)
	}
}
