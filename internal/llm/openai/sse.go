package openai

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxEvent bounds the data of one event, as the SDK's decoder bounds a
// line: a provider that never ends an event must not grow memory without
// limit.
const maxEvent = 32 << 20

// errEventTooLarge is a stream event larger than maxEvent.
var errEventTooLarge = errors.New("a stream event is larger than 32 MiB")

// eventReader reads the events of a text/event-stream body, as the SDK's
// decoder does: lines end in LF (a CR before it is dropped); a blank line
// dispatches the event if it has data; the values of its data lines are
// joined, each followed by a newline; comments and fields other than data
// are ignored (Chat Completions names no events it needs). An event not
// ended by a blank line when the body ends is dropped.
//
// It also notes whether a data line is exactly the end marker [DONE]: the
// body may stop right after that line, before its blank line.
type eventReader struct {
	r    *bufio.Reader
	data []byte // the event being read; reused
	long []byte // a line longer than r's buffer; reused
	done bool   // a data: [DONE] line was read
}

func newEventReader(body io.Reader) *eventReader {
	return &eventReader{r: bufio.NewReaderSize(body, 4096)}
}

// next returns the data of the next event, valid until the following call,
// or the error that ended the body (io.EOF at its clean end).
func (e *eventReader) next() ([]byte, error) {
	e.data = e.data[:0]
	for {
		line, err := e.line()
		if len(line) == 0 && err != nil {
			return nil, err
		}
		if len(line) == 0 {
			if len(e.data) > 0 {
				return e.data, nil
			}
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if string(name) == "data" {
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
			if string(value) == "[DONE]" {
				e.done = true
			}
			if len(e.data)+len(value) >= maxEvent {
				return nil, errEventTooLarge
			}
			e.data = append(e.data, value...)
			e.data = append(e.data, '\n')
		}
		if err != nil {
			return nil, err
		}
	}
}

// line reads one line without its line ending. At the end of the body it
// returns the unterminated rest, if any, with the error.
func (e *eventReader) line() ([]byte, error) {
	line, err := e.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		e.long = append(e.long[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(e.long) >= maxEvent {
				return nil, errEventTooLarge
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
