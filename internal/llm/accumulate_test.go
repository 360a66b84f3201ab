package llm_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentchat/agentchat/internal/llm"
)

func TestAccumulator(t *testing.T) {
	t.Parallel()
	chunks := []llm.Chunk{
		{Reasoning: "Let me "},
		{Reasoning: "see."},
		{Text: "Checking"},
		{Text: " both."},
		// Two calls, interleaved, the second announced first, IDs repeated
		// on a later fragment as some providers do.
		{ToolCall: &llm.ToolCallDelta{Index: 1, ID: "b", Name: "calculator"}},
		{ToolCall: &llm.ToolCallDelta{Index: 0, ID: "a", Name: "get_current_time"}},
		{ToolCall: &llm.ToolCallDelta{Index: 1, ArgsDelta: `{"expression":`}},
		{ToolCall: &llm.ToolCallDelta{Index: 0, ArgsDelta: `{"timezone":"UTC"}`}},
		{ToolCall: &llm.ToolCallDelta{Index: 1, ID: "b", ArgsDelta: `"2+2"}`}},
		// A call with no arguments and no ID.
		{ToolCall: &llm.ToolCallDelta{Index: 3, Name: "ping"}},
		{FinishReason: "tool_calls"},
		{Usage: &llm.Usage{InputTokens: 10, OutputTokens: 5}},
	}
	var a llm.Accumulator
	for _, c := range chunks {
		a.Add(c)
	}
	if a.Text() != "Checking both." || a.Reasoning() != "Let me see." {
		t.Errorf("text %q reasoning %q", a.Text(), a.Reasoning())
	}
	want := []llm.ToolCall{
		{ID: "a", Name: "get_current_time", Arguments: json.RawMessage(`{"timezone":"UTC"}`)},
		{ID: "b", Name: "calculator", Arguments: json.RawMessage(`{"expression":"2+2"}`)},
		{ID: "call_3", Name: "ping", Arguments: json.RawMessage(`{}`)},
	}
	if got := a.ToolCalls(); !reflect.DeepEqual(got, want) {
		t.Errorf("ToolCalls() =\n%s\nwant\n%s", jsonOf(got), jsonOf(want))
	}
	if a.FinishReason() != "tool_calls" || *a.Usage() != (llm.Usage{InputTokens: 10, OutputTokens: 5}) {
		t.Errorf("finish %q usage %+v", a.FinishReason(), a.Usage())
	}
	msg := a.Message()
	if msg.Role != llm.RoleAssistant || msg.Content != "Checking both." || len(msg.ToolCalls) != 3 {
		t.Errorf("Message() = %+v", msg)
	}
}

func TestAccumulatorEmpty(t *testing.T) {
	t.Parallel()
	var a llm.Accumulator
	if a.Text() != "" || a.ToolCalls() != nil || a.Usage() != nil || a.FinishReason() != "" {
		t.Errorf("zero Accumulator not empty")
	}
}

func TestCollect(t *testing.T) {
	t.Parallel()
	cut := &llm.Error{Code: llm.CodeStreamCut, Err: llm.ErrStreamCut}
	s := &sliceStream{chunks: []llm.Chunk{{Text: "par"}, {Text: "tial"}}, err: cut}
	a, err := llm.Collect(s)
	if a.Text() != "partial" || !errors.Is(err, llm.ErrStreamCut) {
		t.Fatalf("Collect = %q, %v; want the partial text and the stream's error", a.Text(), err)
	}
}

func jsonOf(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
