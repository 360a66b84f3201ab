package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/llm/openai"
	"github.com/agentchat/agentchat/internal/llm/transport"
)

func newModel(serverURL, apiKey string, maxRetries int, timeout time.Duration) (llm.Model, error) {
	return newModelWith(nil)(serverURL, apiKey, maxRetries, timeout)
}

// newModelWith builds the adapter with client (nil: http.DefaultClient).
func newModelWith(client *http.Client) func(serverURL, apiKey string, maxRetries int, timeout time.Duration) (llm.Model, error) {
	return func(serverURL, apiKey string, maxRetries int, timeout time.Duration) (llm.Model, error) {
		return openai.New(openai.Config{
			BaseURL:    serverURL + "/v1",
			APIKey:     apiKey,
			Model:      "gpt-test",
			MaxRetries: maxRetries,
			Timeout:    timeout,
			HTTPClient: client,
		})
	}
}

var adapter = llmtest.Adapter{NewHandler: llmtest.OpenAIHandler, Path: "/v1/chat/completions", NewModel: newModel, Model: "gpt-test"}

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

// TestIgnoresEnvironment: the SDK's NewClient reads OPENAI_API_KEY and
// OPENAI_BASE_URL; the adapter must not, or a key meant for OpenAI would be
// sent to a local Ollama, or requests would go elsewhere. Not parallel: Setenv.
func TestIgnoresEnvironment(t *testing.T) { llmtest.IgnoresEnvironment(t, adapter) }

func BenchmarkStream(b *testing.B) { llmtest.BenchmarkAdapter(b, adapter) }

// BenchmarkStreamOverTransport reads a chunk per token through the
// server's HTTP client (package transport), as a run reads its model.
func BenchmarkStreamOverTransport(b *testing.B) {
	a := adapter
	a.NewModel = newModelWith(&http.Client{Transport: transport.New(&http.Transport{})})
	llmtest.BenchmarkAdapterChunked(b, a)
}

func setup(t *testing.T, opts llmtest.Options) (llm.Model, *llmtest.Server) {
	t.Helper()
	srv := llmtest.NewOpenAIServer(t, opts)
	m, err := newModel(srv.URL, llmtest.TestKey, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, srv
}

func TestRequest(t *testing.T) {
	t.Parallel()
	m, srv := setup(t, llmtest.Options{})
	temp := 0.2
	req := llm.Request{
		Model: "deepseek-chat",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "Be brief."},
			{Role: llm.RoleUser, Parts: []llm.Part{
				{Type: "text", Text: "What is this?"},
				{Type: "image_url", ImageURL: "https://example.com/cat.png"},
			}},
			{Role: llm.RoleAssistant, Content: "Let me check.", ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"q":"cat"}`)},
				{ID: "call_2", Name: "ping"},
			}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Name: "lookup", Content: "a cat"},
			{Role: llm.RoleTool, ToolCallID: "call_2", Name: "ping", Content: "pong"},
		},
		Tools: []llm.ToolSpec{
			{Name: "lookup", Description: "Looks things up.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)},
			{Name: "ping"},
		},
		MaxTokens:   50,
		Temperature: &temp,
		JSONObject:  true,
	}
	s, err := m.Stream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(s); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	if got.Path != "/v1/chat/completions" || got.Header.Get("Authorization") != "Bearer "+llmtest.TestKey {
		t.Errorf("path %q auth %q", got.Path, got.Header.Get("Authorization"))
	}
	want := `{
		"model": "deepseek-chat",
		"stream": true,
		"stream_options": {"include_usage": true},
		"max_tokens": 50,
		"temperature": 0.2,
		"response_format": {"type": "json_object"},
		"messages": [
			{"role": "system", "content": "Be brief."},
			{"role": "user", "content": [
				{"type": "text", "text": "What is this?"},
				{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
			]},
			{"role": "assistant", "content": "Let me check.", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"cat\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "ping", "arguments": "{}"}}
			]},
			{"role": "tool", "tool_call_id": "call_1", "content": "a cat"},
			{"role": "tool", "tool_call_id": "call_2", "content": "pong"}
		],
		"tools": [
			{"type": "function", "function": {"name": "lookup", "description": "Looks things up.",
				"parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}},
			{"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}}
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

// TestToolParameters: a tool's schema is sent as written (key order kept,
// a description with characters JSON must escape), a missing or null one as
// the empty object schema, and one that is not a JSON object is refused
// before any request.
func TestToolParameters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, params, want string // want: the tool's JSON sent; empty: refused
	}{
		{"as written", `{"type":"object","required":["b"],"properties":{"b":{"type":"string"},"a":{"type":"integer"}}}`,
			`{"type":"function","function":{"name":"t","description":"Say \"hi\"\n\u003cb\u003e","parameters":{"type":"object","required":["b"],"properties":{"b":{"type":"string"},"a":{"type":"integer"}}}}}`},
		{"missing", ``, `{"type":"function","function":{"name":"t","description":"Say \"hi\"\n\u003cb\u003e","parameters":{"type":"object","properties":{}}}}`},
		{"null", `null`, `{"type":"function","function":{"name":"t","description":"Say \"hi\"\n\u003cb\u003e","parameters":{"type":"object","properties":{}}}}`},
		{"an array", `[{"type":"object"}]`, ``},
		{"a string", `"object"`, ``},
		{"not JSON", `{"type":`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, srv := setup(t, llmtest.Options{})
			s, err := m.Stream(t.Context(), llm.Request{
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
				Tools:    []llm.ToolSpec{{Name: "t", Description: "Say \"hi\"\n<b>", Parameters: json.RawMessage(tc.params)}},
			})
			if tc.want == "" {
				if err == nil {
					s.Close()
					t.Fatal("a tool whose parameters are not a JSON object was sent")
				}
				if n := len(srv.Requests()); n != 0 {
					t.Errorf("%d requests sent", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := llm.Collect(s); err != nil {
				t.Fatal(err)
			}
			var body struct {
				Tools []json.RawMessage `json:"tools"`
			}
			if err := json.Unmarshal(srv.Requests()[0].Raw, &body); err != nil {
				t.Fatal(err)
			}
			if len(body.Tools) != 1 || string(body.Tools[0]) != tc.want {
				t.Errorf("tools sent = %s\nwant [%s]", body.Tools, tc.want)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []openai.Config{
		{},
		{Model: "m", BaseURL: "ftp://example.com"},
		{Model: "m", BaseURL: "not a url"},
	} {
		if _, err := openai.New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error", cfg)
		}
	}
	m, err := openai.New(openai.Config{Model: "gpt-4o-mini", APIKey: "sk-x"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Name(), "gpt-4o-mini (openai-compatible, api.openai.com)"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
}

// rawServer answers every request with body, verbatim: for the quirks of
// OpenAI-compatible servers that the fake's script does not produce.
func rawServer(t *testing.T, body string) llm.Model {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	m, err := newModel(srv.URL, "k", -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sse(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	return b.String()
}

func TestCompatibleServerQuirks(t *testing.T) {
	t.Parallel()
	const head = `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":`
	delta := func(d string, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return head + d + `,"finish_reason":` + f + `}]}`
	}
	tests := []struct {
		name    string
		body    string
		want    []llm.Chunk
		wantErr string
	}{
		{
			name: "parallel calls all at index 0, told apart by id",
			body: sse(
				delta(`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":""}}]}`, ""),
				delta(`{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}`, ""),
				delta(`{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"g","arguments":"{\"x\":1}"}}]}`, ""),
				delta(`{}`, "tool_calls"), "[DONE]"),
			want: []llm.Chunk{
				{ToolCall: &llm.ToolCallDelta{Index: 0, ID: "a", Name: "f"}},
				{ToolCall: &llm.ToolCallDelta{Index: 0, ArgsDelta: "{}"}},
				{ToolCall: &llm.ToolCallDelta{Index: 1, ID: "b", Name: "g", ArgsDelta: `{"x":1}`}},
				{FinishReason: "tool_calls"},
			},
		},
		{
			name: "name and id repeated on every fragment",
			body: sse(
				delta(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\""}}]}`, ""),
				delta(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":":1}"}}]}`, ""),
				delta(`{}`, "function_call"), "[DONE]"),
			want: []llm.Chunk{
				{ToolCall: &llm.ToolCallDelta{Index: 0, ID: "a", Name: "f", ArgsDelta: `{"x"`}},
				{ToolCall: &llm.ToolCallDelta{Index: 0, ArgsDelta: ":1}"}},
				{FinishReason: "tool_calls"},
			},
		},
		{
			name: "reasoning field, usage null on every chunk, then a usage chunk",
			body: sse(
				head+`{"reasoning":"hmm"},"finish_reason":null}],"usage":null}`,
				head+`{"content":"ok","reasoning_content":null},"finish_reason":"stop"}],"usage":null}`,
				`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":2}}}`,
				"[DONE]"),
			want: []llm.Chunk{{Reasoning: "hmm"}, {Text: "ok"}, {FinishReason: "stop"}, {Usage: &llm.Usage{InputTokens: 3, OutputTokens: 2, CachedInputTokens: 2}}},
		},
		{
			name: "[DONE] without a finish reason ends cleanly",
			body: sse(delta(`{"content":"ok"}`, ""), "[DONE]"),
			want: []llm.Chunk{{Text: "ok"}},
		},
		{
			name: "a finish reason without [DONE] ends cleanly",
			body: sse(delta(`{"content":"ok"}`, "stop")),
			want: []llm.Chunk{{Text: "ok"}, {FinishReason: "stop"}},
		},
		{
			name:    "neither is a cut",
			body:    sse(delta(`{"content":"ok"}`, "")),
			want:    []llm.Chunk{{Text: "ok"}},
			wantErr: llm.CodeStreamCut,
		},
		{
			name:    "[DONE] inside the text is not the marker",
			body:    sse(delta(`{"content":"data: [DONE]"}`, "")),
			want:    []llm.Chunk{{Text: "data: [DONE]"}},
			wantErr: llm.CodeStreamCut,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := rawServer(t, tt.body).Stream(t.Context(), llm.Request{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got []llm.Chunk
			for s.Next() {
				got = append(got, s.Chunk())
			}
			if !reflect.DeepEqual(got, tt.want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(tt.want)
				t.Errorf("chunks =\n%s\nwant\n%s", g, w)
			}
			var code string
			if lerr, ok := s.Err().(*llm.Error); ok {
				code = lerr.Code
			} else if s.Err() != nil {
				code = s.Err().Error()
			}
			if code != tt.wantErr {
				t.Errorf("error %v, want code %q", s.Err(), tt.wantErr)
			}
		})
	}
}
