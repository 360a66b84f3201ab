package event

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// wire is the JSON form of an Event, used where an event crosses a process
// boundary as a whole (the Redis bus). It is not a client wire format.
type wire struct {
	Tenant    string          `json:"tenant"`
	Thread    string          `json:"thread"`
	Run       string          `json:"run"`
	Seq       int64           `json:"seq"`
	Time      time.Time       `json:"time"`
	Type      Type            `json:"type"`
	Turn      string          `json:"turn,omitempty"`
	Iteration int             `json:"iteration,omitempty"`
	Step      string          `json:"step,omitempty"`
	Payload   json.RawMessage `json:"payload"`
}

// MarshalJSON encodes the event with its payload, as json.Marshal would
// encode its wire form (UnmarshalJSON reads either). It appends the fields
// by hand: every event of a replica passes through here on its way to
// Redis, and json.Marshal of wire reflected on it, formatted the time
// through its own MarshalJSON and then validated and compacted the
// already-compact payload a second time.
func (e Event) MarshalJSON() ([]byte, error) {
	p, err := EncodePayload(e.Payload)
	if err != nil {
		return nil, err
	}
	if y := e.Time.Year(); y < 0 || y >= 10000 {
		return nil, fmt.Errorf("event: time %v: year outside of range [0,9999]", e.Time)
	}
	b := make([]byte, 0, 160+len(e.Tenant)+len(e.Thread)+len(e.Run)+len(e.Turn)+len(e.Step)+len(p))
	b = append(b, `{"tenant":`...)
	b = appendString(b, e.Tenant)
	b = append(b, `,"thread":`...)
	b = appendString(b, e.Thread)
	b = append(b, `,"run":`...)
	b = appendString(b, e.Run)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","type":`...)
	b = appendString(b, string(e.Type))
	if e.Turn != "" {
		b = append(b, `,"turn":`...)
		b = appendString(b, e.Turn)
	}
	if e.Iteration != 0 {
		b = append(b, `,"iteration":`...)
		b = strconv.AppendInt(b, int64(e.Iteration), 10)
	}
	if e.Step != "" {
		b = append(b, `,"step":`...)
		b = appendString(b, e.Step)
	}
	b = append(b, `,"payload":`...)
	b = append(b, p...) // json.Marshal's output: compact and valid
	return append(b, '}'), nil
}

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it (invalid UTF-8 becomes U+FFFD; <, >, & and U+2028/U+2029 are
// escaped so that the output is also safe inside HTML).
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// UnmarshalJSON decodes an event encoded by MarshalJSON.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	p, err := DecodePayload(w.Type, w.Payload)
	if err != nil {
		return err
	}
	*e = Event{w.Tenant, w.Thread, w.Run, w.Seq, w.Time, w.Type, w.Turn, w.Iteration, w.Step, p}
	return nil
}
