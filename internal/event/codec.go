package event

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/agentchat/agentchat/internal/jsonstr"
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
// encode its wire form (UnmarshalJSON reads either). See AppendJSON.
func (e Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(nil)
}

// AppendJSON appends the event's MarshalJSON encoding to b. It appends the
// fields by hand: every event of a replica passes through here on its way
// to Redis, and json.Marshal of wire reflected on it, formatted the time
// through its own MarshalJSON and then validated and compacted the
// already-compact payload a second time. The bus appends into buffers it
// reuses, so that the encoding is not an allocation per event.
func (e Event) AppendJSON(b []byte) ([]byte, error) {
	if y := e.Time.Year(); y < 0 || y >= 10000 {
		return nil, fmt.Errorf("event: time %v: year outside of range [0,9999]", e.Time)
	}
	var p []byte
	delta, fast := deltaOf(e.Payload)
	if !fast {
		var err error
		if p, err = EncodePayload(e.Payload); err != nil {
			return nil, err
		}
	}
	if b == nil {
		b = make([]byte, 0, 160+len(e.Tenant)+len(e.Thread)+len(e.Run)+len(e.Turn)+len(e.Step)+len(p)+len(delta.MessageID)+len(delta.Delta))
	}
	b = append(b, `{"tenant":`...)
	b = jsonstr.Append(b, e.Tenant)
	b = append(b, `,"thread":`...)
	b = jsonstr.Append(b, e.Thread)
	b = append(b, `,"run":`...)
	b = jsonstr.Append(b, e.Run)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","type":`...)
	b = jsonstr.Append(b, string(e.Type))
	if e.Turn != "" {
		b = append(b, `,"turn":`...)
		b = jsonstr.Append(b, e.Turn)
	}
	if e.Iteration != 0 {
		b = append(b, `,"iteration":`...)
		b = strconv.AppendInt(b, int64(e.Iteration), 10)
	}
	if e.Step != "" {
		b = append(b, `,"step":`...)
		b = jsonstr.Append(b, e.Step)
	}
	b = append(b, `,"payload":`...)
	if fast {
		// json.Marshal of a delta's two strings, by hand: most events are
		// deltas, and reflecting on them was a third of this encoding.
		b = append(b, `{"messageId":`...)
		b = jsonstr.Append(b, delta.MessageID)
		b = append(b, `,"delta":`...)
		b = jsonstr.Append(b, delta.Delta)
		b = append(b, '}')
	} else {
		b = append(b, p...) // json.Marshal's output: compact and valid
	}
	return append(b, '}'), nil
}

// deltaOf reports whether p is a text or reasoning delta (their JSON is
// the same two fields), and its fields.
func deltaOf(p Payload) (TextDeltaData, bool) {
	switch d := p.(type) {
	case TextDeltaData:
		return d, true
	case ReasoningDeltaData:
		return TextDeltaData(d), true
	}
	return TextDeltaData{}, false
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
