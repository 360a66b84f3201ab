package agui

import (
	"encoding/json"
	"testing"
)

func TestCommandResume(t *testing.T) {
	t.Parallel()
	tests := []struct {
		props   string
		ok      bool
		bad     bool
		id      string
		payload string
	}{
		{`{}`, false, false, "", ""},
		{`{"command":{"resume":null}}`, false, false, "", ""},
		{`{"command":{"resume":{"approved":true},"interruptEvent":{"id":"c1"}}}`, true, false, "c1", `{"approved":true}`},
		{`{"command":{"resume":{"approved":false,"reason":"no"},"interruptEvent":"{\"id\":\"c2\"}"}}`, true, false, "c2", `{"approved":false,"reason":"no"}`},
		{`{"command":{"resume":"Approve"}}`, true, false, "", `{"approved":true}`},
		{`{"command":{"resume":"reject","interruptEvent":{"name":"x"}}}`, true, false, "", `{"approved":false}`},
		{`{"command":{"resume":false,"interruptEvent":{"id":"c3"}}}`, true, false, "c3", `{"approved":false}`},
		{`{"command":{"resume":"maybe"}}`, true, true, "", ""},
		{`{"command":{"resume":3}}`, true, true, "", ""},
		{`{"command":{"resume":{"approved":"yes"}}}`, true, true, "", ""},
	}
	for _, tt := range tests {
		in := RunAgentInput{ForwardedProps: json.RawMessage(tt.props)}
		e, ok, err := in.CommandResume()
		if ok != tt.ok || (err != nil) != tt.bad {
			t.Errorf("%s: ok %v err %v", tt.props, ok, err)
			continue
		}
		if tt.bad || !ok {
			continue
		}
		if e.InterruptID != tt.id || string(e.Payload) != tt.payload || e.Status != "resolved" {
			t.Errorf("%s: entry %+v payload %s", tt.props, e, e.Payload)
		}
	}
}
