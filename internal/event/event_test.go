package event

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func TestEveryTypeDecodes(t *testing.T) {
	t.Parallel()
	for _, typ := range Types() {
		p, err := DecodePayload(typ, []byte(`{}`))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if p.EventType() != typ {
			t.Errorf("decoder for %s returns a %s payload", typ, p.EventType())
		}
	}
	if _, err := DecodePayload("nope", []byte(`{}`)); err == nil {
		t.Error("unknown type decoded")
	}
}

func TestEventJSONRoundTrip(t *testing.T) {
	t.Parallel()
	in := Event{
		Tenant: "t", Thread: "c", Run: "r", Seq: 7, Time: time.UnixMilli(1700000000123).UTC(),
		Type: ToolResult, Turn: "turn", Iteration: 2, Step: "worker",
		Payload: ToolResultData{ToolCallID: "call_1", Name: "calculator", Args: json.RawMessage(`{"expression":"1+1"}`),
			Status: ToolSuccess, Output: json.RawMessage(`{"value":2}`), Content: "2"},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Event
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
}
