package store_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

func delta(thread, msg string, seq int64, typ event.Type) event.Event {
	var p event.Payload = event.TextDeltaData{MessageID: msg, Delta: fmt.Sprint("d", seq)}
	if typ == event.ReasoningDelta {
		p = event.ReasoningDeltaData{MessageID: msg, Delta: fmt.Sprint("d", seq)}
	}
	return event.Event{Tenant: "t", Thread: thread, Run: "r", Seq: seq, Time: time.UnixMilli(1_700_000_000_000 + 20*seq).UTC(),
		Type: typ, Turn: "r", Iteration: 1, Step: "worker", Payload: p}
}

// TestPackEvents pins which events share a row; the contract suite pins
// that reading cannot tell.
func TestPackEvents(t *testing.T) {
	t.Parallel()
	tool := event.Event{Tenant: "t", Thread: "a", Run: "r", Seq: 3, Type: event.ToolCallStarted, Payload: event.ToolCallStartedData{ToolCallID: "c"}}
	long := make([]event.Event, store.MaxDeltaRange+5)
	for i := range long {
		long[i] = delta("a", "m", int64(i+1), event.TextDelta)
	}
	tests := []struct {
		name string
		evs  []event.Event
		want [][2]int64 // each row's seq..seq_end, in row order
	}{
		{"one message", []event.Event{delta("a", "m", 1, event.TextDelta), delta("a", "m", 2, event.TextDelta), delta("a", "m", 3, event.TextDelta)}, [][2]int64{{1, 3}}},
		{"two threads interleaved", []event.Event{delta("a", "m", 1, event.TextDelta), delta("b", "m", 7, event.TextDelta), delta("a", "m", 2, event.TextDelta), delta("b", "m", 8, event.TextDelta)},
			[][2]int64{{1, 2}, {7, 8}}},
		{"split by a tool call", []event.Event{delta("a", "m", 1, event.TextDelta), delta("a", "m", 2, event.TextDelta), tool, delta("a", "m", 4, event.TextDelta)},
			[][2]int64{{1, 2}, {3, 3}, {4, 4}}},
		{"reasoning then text", []event.Event{delta("a", "m", 1, event.ReasoningDelta), delta("a", "m", 2, event.ReasoningDelta), delta("a", "m", 3, event.TextDelta), delta("a", "m", 4, event.TextDelta)},
			[][2]int64{{1, 2}, {3, 4}}},
		{"two messages alternating", []event.Event{delta("a", "m", 1, event.TextDelta), delta("a", "n", 2, event.TextDelta), delta("a", "m", 3, event.TextDelta)},
			[][2]int64{{1, 1}, {2, 2}, {3, 3}}},
		{"a gap in seq", []event.Event{delta("a", "m", 1, event.TextDelta), delta("a", "m", 3, event.TextDelta)}, [][2]int64{{1, 1}, {3, 3}}},
		{"longer than a row holds", long, [][2]int64{{1, store.MaxDeltaRange}, {store.MaxDeltaRange + 1, store.MaxDeltaRange + 5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rows, err := store.PackEvents(tt.evs)
			if err != nil {
				t.Fatal(err)
			}
			var got [][2]int64
			for _, r := range rows {
				got = append(got, [2]int64{r.Seq, r.SeqEnd})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("rows %v, want %v", got, tt.want)
			}
			var back []event.Event
			for _, r := range rows {
				if back, err = r.Unpack(back, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			byThreadSeq := func(evs []event.Event) map[string]event.Event {
				m := map[string]event.Event{}
				for _, e := range evs {
					m[fmt.Sprint(e.Thread, e.Seq)] = e
				}
				return m
			}
			if !reflect.DeepEqual(byThreadSeq(back), byThreadSeq(tt.evs)) {
				t.Fatalf("unpacked %+v\nwant %+v", back, tt.evs)
			}
		})
	}
}

// TestLoneDeltaIsAnEvent pins that a delta with no neighbour is stored as any
// event is, byte for byte: rows written before ranges existed read the same.
func TestLoneDeltaIsAnEvent(t *testing.T) {
	t.Parallel()
	e := delta("a", "m", 1, event.TextDelta)
	rows, err := store.PackEvents([]event.Event{e})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := event.EncodePayload(e.Payload)
	if len(rows) != 1 || rows[0].IsRange() || string(rows[0].Payload) != string(want) {
		t.Fatalf("rows %+v, want one with %s", rows, want)
	}
}

func TestPackEventsRefusesRepeatedSeq(t *testing.T) {
	t.Parallel()
	_, err := store.PackEvents([]event.Event{delta("a", "m", 1, event.TextDelta), delta("a", "m", 2, event.TextDelta), delta("a", "m", 2, event.TextDelta)})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("error = %v, want ErrConflict", err)
	}
	// The same seq in two threads is no repeat, in whatever order.
	if _, err := store.PackEvents([]event.Event{delta("a", "m", 2, event.TextDelta), delta("b", "m", 2, event.TextDelta), delta("a", "m", 1, event.TextDelta)}); err != nil {
		t.Fatal(err)
	}
}
