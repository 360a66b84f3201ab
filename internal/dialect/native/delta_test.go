package native

import (
	"testing"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/event"
)

// FuzzDeltaFrame: the frame Encode writes for a text or reasoning delta
// without reflection is the frame appendNamed writes for Map's event, byte
// for byte, whatever the strings hold, and a resuming client is left the
// same frames.
func FuzzDeltaFrame(f *testing.F) {
	f.Add(int64(7), "run_1", "msg_1", "Hello", false)
	f.Add(int64(1), "", "", "", true)
	f.Add(int64(123456789), "r\"<&>", "m\n\u2028", "a\x00b\xff\tc 世界", false)
	f.Fuzz(func(t *testing.T, seq int64, runID, messageID, text string, reasoning bool) {
		var p event.Payload = event.TextDeltaData{MessageID: messageID, Delta: text}
		if reasoning {
			p = event.ReasoningDeltaData{MessageID: messageID, Delta: text}
		}
		ev := event.New(p)
		ev.Seq, ev.Run, ev.Type = seq, runID, p.EventType()
		names := Map(ev)
		if len(names) != 1 {
			t.Fatalf("Map gives %d events for a delta", len(names))
		}
		want := appendNamed([]byte("x"), dialect.ID{Seq: seq}.String(), names[0])
		if got := NewEncoder().Encode([]byte("x"), ev); string(got) != string(want) {
			t.Fatalf("delta frame\n%q\nwant\n%q", got, want)
		}
		for _, at := range []dialect.ID{{Seq: seq}, {Seq: seq - 1}} {
			enc := NewEncoder()
			enc.Resume(at)
			wantResumed := ""
			if at.Seq < seq {
				wantResumed = string(want[1:])
			}
			if got := enc.Encode(nil, ev); string(got) != wantResumed {
				t.Fatalf("resumed after %v: %q, want %q", at, got, wantResumed)
			}
		}
	})
}
