package agui_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/agui"
	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/ssetest"
)

// A run that calls a frontend tool ends in success naming the call the
// client must answer; a strict client sees nothing non-standard.
func TestPendingToolCalls(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		evs := encode(t, m.mode, stamp("r",
			event.RunStartedData{ClientRunID: "c1"},
			event.ToolCallStartedData{ToolCallID: "call-f", Name: "pick_colour", MessageID: "m1"},
			event.ToolCallArgsData{ToolCallID: "call-f", Delta: `{"palette":"warm"}`},
			event.ToolCallReadyData{ToolCallID: "call-f", Name: "pick_colour", Args: json.RawMessage(`{"palette":"warm"}`), Frontend: true},
			event.RunFinishedData{Status: event.StatusSucceeded, PendingToolCalls: []string{"call-f"}},
		))
		want := []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}
		if got := types(evs); !slices.Equal(got, want) {
			t.Fatalf("%s: %v", m.name, got)
		}
		o := evs[4]["outcome"].(map[string]any)
		if o["type"] != "success" || len(o["pendingToolCallIds"].([]any)) != 1 || o["pendingToolCallIds"].([]any)[0] != "call-f" {
			t.Errorf("%s: outcome %v", m.name, o)
		}
		if _, has := o["interrupts"]; has {
			t.Errorf("%s: success outcome carries interrupts", m.name)
		}
	}
	// Before 1.0 a success outcome has no fields: the calls are in the stream.
	evs := verifyStream(t, dialecttest.Encode(agui.NewEncoder(agui.Options{PreV1: true}), stamp("r",
		event.RunStartedData{ClientRunID: "c1"},
		event.ToolCallReadyData{ToolCallID: "call-f", Name: "pick_colour", Args: json.RawMessage(`{}`), Frontend: true},
		event.RunFinishedData{Status: event.StatusSucceeded, PendingToolCalls: []string{"call-f"}},
	)), true)
	if end := evs[len(evs)-1]; end["type"] != "RUN_FINISHED" || end["outcome"] != nil {
		t.Errorf("before 1.0: end %v", end)
	}
}

// RunsEnded counts interrupts and ends, so a stream can stop after one AG-UI run.
func TestRunsEnded(t *testing.T) {
	t.Parallel()
	enc := agui.NewEncoder(agui.Options{})
	var ends []int
	for _, ev := range dialecttest.Script(dialecttest.Rich) {
		enc.Encode(nil, ev)
		ends = append(ends, enc.RunsEnded())
	}
	if ends[len(ends)-1] != 2 || slices.Max(ends[:len(ends)-1]) != 1 {
		t.Errorf("runs ended after each event: %v", ends)
	}
}

// IndexRuns agrees with the stream on which AG-UI run carried what.
func TestIndexRuns(t *testing.T) {
	t.Parallel()
	script := dialecttest.Script(dialecttest.Rich)
	ix := agui.IndexRuns(script)
	// Read the same from the stream itself.
	want := agui.RunIndex{Messages: map[string]string{}, ToolCalls: map[string]string{}, Runs: map[string]string{}}
	run := ""
	for _, ev := range encode(t, agui.Seed, script) {
		if ev["type"] == "RUN_STARTED" {
			run = ev["runId"].(string)
			if _, ok := want.Runs["run-1"]; !ok {
				want.Runs["run-1"] = run
			}
		}
		put := func(m map[string]string, k any) {
			if s, _ := k.(string); s != "" {
				if _, ok := m[s]; !ok {
					m[s] = run
				}
			}
		}
		switch ev["type"] {
		case "TEXT_MESSAGE_START":
			put(want.Messages, ev["messageId"])
		case "TOOL_CALL_START":
			put(want.ToolCalls, ev["toolCallId"])
		case "TOOL_CALL_RESULT":
			put(want.Messages, ev["messageId"])
			put(want.ToolCalls, ev["toolCallId"])
		}
	}
	if !mapsEqual(ix.Messages, want.Messages) || !mapsEqual(ix.ToolCalls, want.ToolCalls) || !mapsEqual(ix.Runs, want.Runs) {
		t.Fatalf("index %+v\nstream %+v", ix, want)
	}
	// The first call's result arrived during the pause: the continuation carried it.
	if ix.Messages["msg-t1"] != "client-run-2" || ix.Messages["msg-a2"] != "client-run-2" || ix.ToolCalls["call-1"] != "client-run-1" {
		t.Errorf("index %+v", ix)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Priming an encoder with the events up to an id and then encoding the rest
// gives exactly the frames the whole stream has after that id: a resumed
// stream continues the one before it.
func TestPrimedContinuation(t *testing.T) {
	t.Parallel()
	script := dialecttest.Script(dialecttest.Rich)
	full := dialecttest.Encode(agui.NewEncoder(agui.Options{Mode: agui.Seed}), script)
	for k := range script {
		enc := agui.NewEncoder(agui.Options{Mode: agui.Seed})
		var before []byte
		for _, ev := range script[:k] {
			before = enc.Encode(before, ev)
		}
		after := dialecttest.Encode(enc, script[k:])
		if string(before)+string(after) != string(full) {
			t.Fatalf("split at %d differs from the whole stream", k)
		}
		if k > 0 {
			last := dialect.ID{Seq: script[k-1].Seq}
			for _, f := range ssetest.Parse(t, after) {
				if id, ok := dialect.ParseID(f.ID); !ok || !dialect.Less(last, id) {
					t.Fatalf("split at %d: frame id %s not after %v", k, f.ID, last)
				}
			}
		}
	}
}
