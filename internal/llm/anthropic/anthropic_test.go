package anthropic_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/anthropic"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/llm/transport"
)

func newModel(serverURL, apiKey string, maxRetries int, timeout time.Duration) (llm.Model, error) {
	return newModelWith(nil)(serverURL, apiKey, maxRetries, timeout)
}

// newModelWith builds the adapter with client (nil: http.DefaultClient).
func newModelWith(client *http.Client) func(serverURL, apiKey string, maxRetries int, timeout time.Duration) (llm.Model, error) {
	return func(serverURL, apiKey string, maxRetries int, timeout time.Duration) (llm.Model, error) {
		return anthropic.New(anthropic.Config{
			BaseURL:    serverURL,
			APIKey:     apiKey,
			Model:      "claude-test",
			MaxRetries: maxRetries,
			Timeout:    timeout,
			HTTPClient: client,
		})
	}
}

var adapter = llmtest.Adapter{NewHandler: llmtest.AnthropicHandler, Path: "/v1/messages", NewModel: newModel, Model: "claude-test"}

func TestAdapter(t *testing.T) {
	t.Parallel()
	llmtest.RunAdapter(t, adapter)
}

// TestAdapterOverTransport runs the contract over the HTTP client the
// server gives models: package transport's, which reads the answer on the
// caller's goroutine.
func TestAdapterOverTransport(t *testing.T) {
	t.Parallel()
	a := adapter
	a.NewModel = newModelWith(&http.Client{Transport: transport.New(&http.Transport{})})
	llmtest.RunAdapter(t, a)
}

// TestIgnoresEnvironment: the SDK's NewClient reads ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL unless told not to. Not parallel: Setenv.
func TestIgnoresEnvironment(t *testing.T) { llmtest.IgnoresEnvironment(t, adapter) }

func BenchmarkStream(b *testing.B) { llmtest.BenchmarkAdapter(b, adapter) }

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

// A tool call's arguments are JSON in the Messages API (the input of a
// tool_use block): arguments that are not are refused before sending.
func TestToolCallArgumentsMustBeJSON(t *testing.T) {
	t.Parallel()
	m, srv := setup(t, llmtest.Options{})
	_, err := m.Stream(t.Context(), llm.Request{Messages: []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "x", Arguments: json.RawMessage(`{`)}}},
	}})
	if lerr, ok := err.(*llm.Error); !ok || lerr.Code != llm.CodeBadRequest {
		t.Errorf("err = %v, want %s", err, llm.CodeBadRequest)
	}
	if srv.Count() != 0 {
		t.Errorf("%d requests sent, want none", srv.Count())
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

// An error event that is not JSON still ends the stream as the provider's
// failure, after the text that came before it. (The SDK reads any data into
// an *sdk.Error; the adapter's typed undecodedError covers an SDK that
// refuses it, as the SDK's own stream decoder allows for.)
func TestErrorEventNotJSON(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: content_block_delta\n"+
			`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`+"\n\n"+
			"event: error\ndata: upstream exploded, key "+llmtest.TestKey+"\n\n")
	}))
	t.Cleanup(srv.Close)
	m, err := newModel(srv.URL, llmtest.TestKey, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Stream(t.Context(), llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := llm.Collect(s)
	llmtest.NoSecret(t, err, llmtest.TestKey)
	var lerr *llm.Error
	if acc.Text() != "Hel" || !errors.As(err, &lerr) || lerr.Code != llm.CodeUnknown || !strings.Contains(lerr.Message, "failed mid-answer") {
		t.Fatalf("text %q, err %v: want Hel, then %s saying the provider failed mid-answer", acc.Text(), err, llm.CodeUnknown)
	}
	if cause := errors.Unwrap(err); cause == nil || !strings.Contains(cause.Error(), "upstream exploded") {
		t.Errorf("cause %v, want the event's text", cause)
	}
}
