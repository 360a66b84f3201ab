package store

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/event"
)

// TestDeltaRangeJSON: a range row's payload written by hand is what
// json.Marshal writes for its deltaRange, the stored shape rows had before,
// and a lone delta's what it writes for the delta's payload.
func TestDeltaRangeJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		msg    string
		deltas []string
		ms     []int64
	}{
		{"m", []string{"a", "b"}, []int64{0, 20}},
		{"msg_01J", []string{"Hello", " world", "", "!"}, []int64{0, 0, 1234567, -3}},
		{"<&>\"\\", []string{"\x00\x1f\u2028\u2029", "\xff\xfe", "世界 \t\n\r"}, []int64{0, 9223372036854775807, -9223372036854775808}},
	} {
		want, err := json.Marshal(deltaRange{MessageID: tt.msg, Deltas: tt.deltas, MS: tt.ms})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendDeltaRange(nil, tt.msg, tt.deltas, tt.ms); string(got) != string(want) {
			t.Errorf("appendDeltaRange\n%s\nwant\n%s", got, want)
		}
		for _, d := range tt.deltas {
			checkDelta(t, tt.msg, d)
		}
	}
}

// checkDelta holds appendDelta to json.Marshal of either delta payload.
func checkDelta(t *testing.T, msg, text string) {
	t.Helper()
	for _, p := range []event.Payload{event.TextDeltaData{MessageID: msg, Delta: text}, event.ReasoningDeltaData{MessageID: msg, Delta: text}} {
		want, err := event.EncodePayload(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendDelta([]byte("x"), msg, text); string(got) != "x"+string(want) {
			t.Fatalf("appendDelta\n%q\nwant\n%q", got[1:], want)
		}
	}
}

// FuzzDeltaRangeJSON holds appendDeltaRange and appendDelta to json.Marshal
// for any strings.
func FuzzDeltaRangeJSON(f *testing.F) {
	f.Add("m", "a", "b", int64(0), int64(20))
	f.Add("<m>", "\x00\xff", "\u2028", int64(-1), int64(1<<62))
	f.Fuzz(func(t *testing.T, msg, d1, d2 string, ms1, ms2 int64) {
		deltas, ms := []string{d1, d2}, []int64{ms1, ms2}
		want, err := json.Marshal(deltaRange{MessageID: msg, Deltas: deltas, MS: ms})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendDeltaRange(nil, msg, deltas, ms); string(got) != string(want) {
			t.Fatalf("appendDeltaRange\n%q\nwant\n%q", got, want)
		}
		checkDelta(t, msg, d1)
	})
}

// BenchmarkPackEvents is the event log's packing of one batch: a thousand
// streams' deltas of one linger, five a stream, as the ramp load writes them.
func BenchmarkPackEvents(b *testing.B) {
	const streams, perStream = 1000, 5
	evs := make([]event.Event, 0, streams*perStream)
	at := time.UnixMilli(1_700_000_000_000).UTC()
	for k := range perStream {
		for s := range streams {
			evs = append(evs, event.Event{Tenant: "t", Thread: fmt.Sprint("conv_", s), Run: fmt.Sprint("run_", s), Seq: int64(k + 1),
				Time: at.Add(time.Duration(k) * 20 * time.Millisecond), Type: event.TextDelta, Turn: "turn", Iteration: 1, Step: "worker",
				Payload: event.TextDeltaData{MessageID: fmt.Sprint("msg_", s), Delta: " token"}})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PackEvents(evs); err != nil {
			b.Fatal(err)
		}
	}
}
