package anthropic_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/anthropic"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
)

func newModel(serverURL, apiKey string, maxRetries int, timeout time.Duration) (llm.Model, error) {
	return anthropic.New(anthropic.Config{
		BaseURL:    serverURL,
		APIKey:     apiKey,
		Model:      "claude-test",
		MaxRetries: maxRetries,
		Timeout:    timeout,
	})
}

func TestAdapter(t *testing.T) {
	t.Parallel()
	llmtest.RunAdapter(t, llmtest.Adapter{NewServer: llmtest.NewAnthropicServer, NewModel: newModel})
}

func setup(t *testing.T, opts llmtest.Options) (llm.Model, *llmtest.Server) {
	t.Helper()
	srv := llmtest.NewAnthropicServer(t, opts)
	m, err := newModel(srv.URL, llmtest.TestKey, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, srv
}

func TestRequest(t *testing.T) {
	t.Parallel()
	m, srv := setup(t, llmtest.Options{})
	req := llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "Be brief."},
			{Role: llm.RoleUser, Parts: []llm.Part{
				{Type: "text", Text: "What is this?"},
				{Type: "image_url", ImageURL: "https://example.com/cat.png"},
			}},
			{Role: llm.RoleAssistant, Content: "Let me check.", ToolCalls: []llm.ToolCall{
				{ID: "toolu_1", Name: "lookup", Arguments: json.RawMessage(`{"q":"cat"}`)},
				{ID: "toolu_2", Name: "ping"},
			}},
			{Role: llm.RoleTool, ToolCallID: "toolu_1", Name: "lookup", Content: "a cat"},
			{Role: llm.RoleTool, ToolCallID: "toolu_2", Name: "ping", Content: "pong"},
			{Role: llm.RoleUser, Content: "Thanks."},
		},
		Tools: []llm.ToolSpec{
			{Name: "lookup", Description: "Looks things up.", Parameters: json.RawMessage(
				`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`)},
			{Name: "ping"},
		},
		JSONObject: true,
	}
	s, err := m.Stream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(s); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	if got.Path != "/v1/messages" || got.APIKey() != llmtest.TestKey {
		t.Errorf("path %q key %q", got.Path, got.APIKey())
	}
	// Tool results and the next user message share one user turn.
	want := `{
		"model": "claude-test",
		"max_tokens": 4096,
		"stream": true,
		"system": [
			{"type": "text", "text": "Be brief."},
			{"type": "text", "text": "Answer with a single JSON object and nothing else."}
		],
		"messages": [
			{"role": "user", "content": [
				{"type": "text", "text": "What is this?"},
				{"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}
			]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "Let me check."},
				{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "cat"}},
				{"type": "tool_use", "id": "toolu_2", "name": "ping", "input": {}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": false, "content": [{"type": "text", "text": "a cat"}]},
				{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": false, "content": [{"type": "text", "text": "pong"}]},
				{"type": "text", "text": "Thanks."}
			]}
		],
		"tools": [
			{"name": "lookup", "description": "Looks things up.", "input_schema": {
				"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": false}},
			{"name": "ping", "input_schema": {"type": "object", "properties": {}}}
		]
	}`
	var wantBody map[string]any
	if err := json.Unmarshal([]byte(want), &wantBody); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Body, wantBody) {
		t.Errorf("request body =\n%s\nwant\n%s", got.Raw, want)
	}
}

func TestMaxTokens(t *testing.T) {
	t.Parallel()
	m, srv := setup(t, llmtest.Options{})
	s, err := m.Stream(t.Context(), llm.Request{Model: "claude-other", MaxTokens: 64, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if b := srv.Requests()[0].Body; b["max_tokens"] != 64.0 || b["model"] != "claude-other" {
		t.Errorf("max_tokens %v model %v, want the request's 64 and claude-other", b["max_tokens"], b["model"])
	}
}

func TestFinishReasons(t *testing.T) {
	t.Parallel()
	// The fake translates llm finish reasons to stop_reason; the adapter must translate them back.
	for _, reason := range []string{"stop", "tool_calls", "length", "content_filter"} {
		t.Run(reason, func(t *testing.T) {
			t.Parallel()
			m, _ := setup(t, llmtest.Options{Replies: []llmtest.Reply{{Text: []string{"x"}, FinishReason: reason}}})
			s, err := m.Stream(t.Context(), llm.Request{})
			if err != nil {
				t.Fatal(err)
			}
			if acc, err := llm.Collect(s); err != nil || acc.FinishReason() != reason {
				t.Errorf("finish %q (%v), want %q", acc.FinishReason(), err, reason)
			}
		})
	}
}

func TestBadRequestBeforeSending(t *testing.T) {
	t.Parallel()
	m, srv := setup(t, llmtest.Options{})
	for _, req := range []llm.Request{
		{Messages: []llm.Message{{Role: "robot", Content: "hi"}}},
		{Messages: []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "x", Arguments: json.RawMessage(`{`)}}}}},
		{Tools: []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`"no"`)}}},
	} {
		_, err := m.Stream(t.Context(), req)
		if lerr, ok := err.(*llm.Error); !ok || lerr.Code != llm.CodeBadRequest {
			t.Errorf("err = %v, want %s", err, llm.CodeBadRequest)
		}
	}
	if srv.Count() != 0 {
		t.Errorf("%d requests sent, want none", srv.Count())
	}
}

// TestIgnoresEnvironment: the SDK's NewClient reads ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL unless told not to. Not parallel: Setenv.
func TestIgnoresEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-the-environment")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	srv := llmtest.NewAnthropicServer(t, llmtest.Options{})
	m, err := newModel(srv.URL, "", -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Stream(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	s.Close()
	if key := srv.Requests()[0].APIKey(); key != "" {
		t.Errorf("a credential from the environment was sent: %q", key)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []anthropic.Config{{}, {Model: "m", BaseURL: "ftp://example.com"}} {
		if _, err := anthropic.New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error", cfg)
		}
	}
	m, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: "sk-ant-x"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Name(), "claude-sonnet-4-5 (anthropic, api.anthropic.com)"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
}
