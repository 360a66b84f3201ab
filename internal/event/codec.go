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
	b = append(b, p...) // json.Marshal's output: compact and valid
	return append(b, '}'), nil
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
