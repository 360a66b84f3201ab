package conversation_test

import (
	"encoding/json"
	"flag"
	"slices"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/conversation"
	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/ssetest"
)

var update = flag.Bool("update", false, "rewrite golden files")

var names = []string{"iteration_start", "text", "tool_call", "tool_result", "retrieval", "done", "error"}

// verify checks each frame: a known event name repeated as "type", an id, a
// turn_id, and no null.
func verify(t *testing.T, stream []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, f := range ssetest.Parse(t, stream) {
		dialecttest.NoNull(t, f.Data)
		m := dialecttest.Object(t, f.Data)
		if !slices.Contains(names, f.Event) || m["type"] != f.Event || f.ID == "" {
			t.Fatalf("frame %d: event %q type %v id %q", i, f.Event, m["type"], f.ID)
		}
		if turn, _ := m["turn_id"].(string); turn == "" {
			t.Fatalf("frame %d has no turn_id: %s", i, f.Data)
		}
		out = append(out, m)
	}
	return out
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, name := range dialecttest.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := dialecttest.Encode(conversation.NewEncoder(), dialecttest.Script(name))
			dialecttest.Golden(t, name+".conversation.golden", got, *update)
			verify(t, got)
		})
	}
}

// Seed 002: text → tool call → text yields several iteration_start/text with
// their tool_call/tool_result, a tool_result names its tool_call's id, and
// everything shares the turn_id.
func TestTurnSegmentsAndPairs(t *testing.T) {
	t.Parallel()
	evs := verify(t, dialecttest.Encode(conversation.NewEncoder(), dialecttest.Script(dialecttest.Rich)))
	var seq []string
	calls := map[any]any{}
	for _, ev := range evs {
		if ev["turn_id"] != "turn-1" {
			t.Errorf("turn_id %v", ev["turn_id"])
		}
		typ := ev["type"].(string)
		if len(seq) == 0 || seq[len(seq)-1] != typ {
			seq = append(seq, typ)
		}
		switch typ {
		case "tool_call":
			calls[ev["tool_call_id"]] = ev["tool_name"]
		case "tool_result":
			if name, ok := calls[ev["tool_call_id"]]; !ok || name != ev["tool_name"] {
				t.Errorf("tool_result %v has no matching tool_call", ev["tool_call_id"])
			}
		}
	}
	want := []string{"retrieval", "iteration_start", "text", "tool_call", "tool_result", "iteration_start", "text", "done"}
	if !slices.Equal(seq, want) {
		t.Errorf("segments %v\nwant     %v", seq, want)
	}
	last := evs[len(evs)-1]
	if last["status"] != "succeeded" || last["iterations"] != json.Number("2") || last["tool_calls"] != json.Number("2") || last["message_id"] != "msg-a2" {
		t.Errorf("done %v", last)
	}
	if u, _ := last["usage"].(map[string]any); u["inputTokens"] != json.Number("1200") || u["totalTokens"] != json.Number("1510") {
		t.Errorf("done's usage %v, want the run's (issue 24)", last["usage"])
	}
}

func TestNoEmptyRetrievalAndUnstreamedText(t *testing.T) {
	t.Parallel()
	p := []event.Payload{
		event.RetrievalData{Query: "nothing"},
		event.IterationData{},
		event.MessageCompletedData{MessageID: "m", Role: "assistant", Content: "whole answer"},
		event.RunFinishedData{Status: event.StatusSucceeded},
	}
	var evs []event.Event
	for i, pl := range p {
		evs = append(evs, event.Event{Run: "r", Turn: "t", Seq: int64(i + 1), Iteration: 1, Type: pl.EventType(), Payload: pl})
	}
	got := verify(t, dialecttest.Encode(conversation.NewEncoder(), evs))
	var types []string
	for _, ev := range got {
		types = append(types, ev["type"].(string))
	}
	if !slices.Equal(types, []string{"iteration_start", "text", "done"}) || got[1]["delta"] != "whole answer" {
		t.Errorf("%v", got)
	}
}

func TestKeepAliveAndAbort(t *testing.T) {
	t.Parallel()
	enc := conversation.NewEncoder()
	if got := string(enc.KeepAlive(nil, time.Now())); got != ": keep-alive\n\n" {
		t.Errorf("keep-alive %q", got)
	}
	enc.Encode(nil, event.Event{Run: "r", Turn: "t", Seq: 1, Payload: event.IterationData{}})
	want := "event: error\ndata: {\"type\":\"error\",\"turn_id\":\"t\",\"run_id\":\"r\",\"code\":\"slow_client\",\"message\":\"Reconnect.\"}\n\n"
	if got := string(enc.Abort(nil, event.ErrorInfo{Code: "slow_client", Message: "Reconnect."})); got != want {
		t.Errorf("abort %q", got)
	}
}

func BenchmarkEncodeConversation(b *testing.B) {
	evs := dialecttest.LongRun(1000)
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		enc := conversation.NewEncoder()
		for _, ev := range evs {
			dst = enc.Encode(dst[:0], ev)
		}
	}
}

// Every frame has its own id, and a client that resumes after any frame
// gets exactly the frames after it. A tool_result whose call was never
// announced (a stream that missed the call's ready event) announces it
// first: two frames of one event, "S.1" and "S".
func TestResumeAfterEveryFrame(t *testing.T) {
	t.Parallel()
	newEnc := func() dialect.Encoder { return conversation.NewEncoder() }
	for _, name := range dialecttest.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dialecttest.CheckResume(t, newEnc, dialecttest.Script(name))
		})
	}
	var evs []event.Event
	for i, p := range []event.Payload{
		event.IterationData{},
		event.ToolResultData{ToolCallID: "c1", Name: "calculator", Args: json.RawMessage(`{"expression":"2+2"}`), Status: event.ToolSuccess, Content: "4"},
		event.RunFinishedData{Status: event.StatusSucceeded},
	} {
		evs = append(evs, event.Event{Run: "r", Turn: "t", Seq: int64(i + 1), Iteration: 1, Type: p.EventType(), Payload: p})
	}
	dialecttest.CheckResume(t, newEnc, evs)
	var got []string
	for _, f := range ssetest.Parse(t, dialecttest.Encode(newEnc(), evs)) {
		got = append(got, f.ID+" "+f.Event)
	}
	if want := []string{"1 iteration_start", "2.1 tool_call", "2 tool_result", "3 done"}; !slices.Equal(got, want) {
		t.Errorf("frames %q, want %q", got, want)
	}
}
