package local

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/llm"
)

func TestBuildContext(t *testing.T) {
	t.Parallel()
	calls := func(ids ...string) json.RawMessage {
		var tc []llm.ToolCall
		for _, id := range ids {
			tc = append(tc, llm.ToolCall{ID: id, Name: "calculator", Arguments: json.RawMessage(`{}`)})
		}
		b := chat.AssistantMeta{ToolCalls: storedCalls(tc)}.Marshal()
		return b
	}
	history := []chat.Message{
		{Role: chat.RoleUser, Content: "hi", Parts: json.RawMessage(`[{"type":"text","text":"hi"},{"type":"image_url","imageUrl":"https://x/y.png"}]`)},
		{Role: chat.RoleAssistant, Content: "", Metadata: calls("a", "b")},
		{Role: chat.RoleTool, Content: "1", ToolCallID: "a", ToolName: "calculator"},
		// b was never answered (the run failed): a stand-in answer is added.
		{Role: chat.RoleUser, Content: "again"},
		{Role: chat.RoleAssistant, Content: "partial", Metadata: json.RawMessage(`{"partial":true}`)},
		{Role: chat.RoleAssistant, Content: "", Metadata: json.RawMessage(`{"partial":true}`)}, // an empty partial says nothing
		{Role: chat.RoleAssistant, Content: "", Metadata: calls("c")},
		// c is awaiting a decision: left open for the resumed run to answer.
	}
	got := BuildContext("be brief", history)
	want := []llm.Message{
		{Role: llm.RoleSystem, Content: "be brief"},
		{Role: llm.RoleUser, Content: "hi", Parts: []llm.Part{{Type: "text", Text: "hi"}, {Type: "image_url", ImageURL: "https://x/y.png"}}},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "calculator", Arguments: json.RawMessage(`{}`)}, {ID: "b", Name: "calculator", Arguments: json.RawMessage(`{}`)}}},
		{Role: llm.RoleTool, Content: "1", ToolCallID: "a", Name: "calculator"},
		{Role: llm.RoleTool, Content: "This call did not complete.", ToolCallID: "b", Name: "calculator"},
		{Role: llm.RoleUser, Content: "again"},
		{Role: llm.RoleAssistant, Content: "partial"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "calculator", Arguments: json.RawMessage(`{}`)}}},
	}
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.MarshalIndent(got, "", " ")
		t.Fatalf("context:\n%s", gb)
	}
}

func TestDeriveAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text, resultType string
		points           int
	}{
		{"Done.", "execution_report", 0},
		{"Which city do you mean?", "clarification", 0},
		{"Summary:\n- first\n* second\nend", "execution_report", 2},
	}
	for _, tt := range tests {
		a := DeriveAnswer(tt.text)
		if a.ResultType != tt.resultType || len(a.KeyPoints) != tt.points || a.Answer != tt.text || a.Status != "success" || a.SuggestedActions == nil {
			t.Errorf("%q: %+v", tt.text, a)
		}
	}
}

// panicking is a model whose call panics.
type panicking struct{ llm.Model }

func (panicking) Stream(context.Context, llm.Request) (llm.Stream, error) { panic("model call") }

// TestOffRunRaisesItsPanicOnTheRun: the model call (and retrieval) start on
// a goroutine of their own, and a panic there is the run's, as it was when
// they ran on the run's goroutine.
func TestOffRunRaisesItsPanicOnTheRun(t *testing.T) {
	defer func() {
		if p := recover(); p != "model call" {
			t.Errorf("recovered %v, want the model call's panic", p)
		}
	}()
	offRun(func() { _, _ = panicking{}.Stream(t.Context(), llm.Request{}) })
	t.Error("offRun returned")
}
