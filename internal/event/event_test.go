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

// MarshalJSON appends by hand; its output must be what json.Marshal makes of
// the wire form, byte for byte, whatever the strings hold.
func TestMarshalJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 14, 3, 4, 123456789, time.UTC)
	for _, tc := range []struct {
		name string
		ev   Event
	}{
		{"plain", Event{Tenant: "t", Thread: "c", Run: "r", Seq: 1, Time: at, Type: TextDelta, Payload: TextDeltaData{Delta: "hello"}}},
		{"every field", Event{Tenant: "acme", Thread: "conv_1", Run: "run_1", Seq: 1 << 40, Time: at.In(time.FixedZone("x", 3600)),
			Type: ToolResult, Turn: "turn", Iteration: -3, Step: "worker",
			Payload: ToolResultData{ToolCallID: "call_1", Name: "calc", Output: json.RawMessage(`{"a":"<b>&"}`), Content: "2"}}},
		{"escapes", Event{Tenant: "a\"b\\c", Thread: "\n\r\t\x00\x1f\x7f", Run: "<>&", Seq: 2, Time: at, Type: TextDelta,
			Turn: "\u2028\u2029é漢", Step: "bad\xffutf8\xc3", Payload: TextDeltaData{Delta: "x\u2028<y>"}}},
		{"zero time, no payload", Event{Thread: "c", Seq: 3, Type: TextDelta}},
		{"reasoning", Event{Tenant: "t", Thread: "c", Seq: 4, Time: at, Type: ReasoningDelta,
			Payload: ReasoningDeltaData{MessageID: "m\"<", Delta: "a\x01\u2029b&\xfe"}}},
		{"delta by pointer", Event{Tenant: "t", Thread: "c", Seq: 5, Time: at, Type: TextDelta, Payload: &TextDeltaData{Delta: "p"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.ev.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			// Appending to a buffer in use writes the same after it.
			appended, err := tc.ev.AppendJSON([]byte("prefix"))
			if err != nil {
				t.Fatal(err)
			}
			if string(appended) != "prefix"+string(got) {
				t.Errorf("AppendJSON:\n got %s\nwant prefix%s", appended, got)
			}
			p, err := EncodePayload(tc.ev.Payload)
			if err != nil {
				t.Fatal(err)
			}
			e := tc.ev
			want, err := json.Marshal(wire{e.Tenant, e.Thread, e.Run, e.Seq, e.Time, e.Type, e.Turn, e.Iteration, e.Step, p})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("MarshalJSON:\n got %s\nwant %s", got, want)
			}
		})
	}
	if _, err := (Event{Seq: 1, Type: TextDelta, Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}).MarshalJSON(); err == nil {
		t.Error("a time past year 9999 encoded")
	}
}
