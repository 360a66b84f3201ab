package event

import (
	"encoding/json"
	"time"
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

// MarshalJSON encodes the event with its payload.
func (e Event) MarshalJSON() ([]byte, error) {
	p, err := EncodePayload(e.Payload)
	if err != nil {
		return nil, err
	}
	return json.Marshal(wire{e.Tenant, e.Thread, e.Run, e.Seq, e.Time, e.Type, e.Turn, e.Iteration, e.Step, p})
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
