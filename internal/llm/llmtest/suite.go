package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/fakeupstream"
)

// TestKey is the API key RunAdapter configures. The suite fails if it
// appears in any error text.
const TestKey = "sk-test-0123456789abcdefSECRET"

// Adapter is what RunAdapter, IgnoresEnvironment and BenchmarkAdapter need
// to test one HTTP provider adapter.
type Adapter struct {
	// NewHandler returns the adapter's fake upstream: OpenAIHandler or
	// AnthropicHandler. The suite serves it on a local port.
	NewHandler func(opts Options) *fakeupstream.Handler
	// Path is the path the adapter posts to under the server's URL, e.g.
	// /v1/chat/completions.
	Path string
	// NewModel builds the adapter for a fake upstream at serverURL, with
	// apiKey, maxRetries and timeout (the first-answer bound) as given.
	NewModel func(serverURL, apiKey string, maxRetries int, timeout time.Duration) (llm.Model, error)
	// Model is the model NewModel configures: the one a request that names
	// none asks for.
	Model string
}

func (a Adapter) newServer(t testing.TB, opts Options) *Server { return serve(t, a.NewHandler(opts)) }

// RunAdapter runs the contract every HTTP adapter keeps, against its fake
// upstream through the real SDK: chunk order, tool-call assembly, finish
// reasons, usage, the request's model and token cap, error mapping, stream
// cuts, cancellation, retries, and that the API key never appears in an
// error. A behaviour change lands here, not in one adapter's tests.
func RunAdapter(t *testing.T, a Adapter) {
	t.Helper()
	// model builds the adapter without retries, so each failure shows once.
	model := func(t *testing.T, srv *Server) llm.Model {
		m, err := a.NewModel(srv.URL, TestKey, -1, 0)
		if err != nil {
			t.Fatalf("NewModel: %v", err)
		}
		return m
	}
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}

	t.Run("text and reasoning in order", func(t *testing.T) {
		t.Parallel()
		srv := a.newServer(t, Options{Replies: []Reply{{
			Reasoning: []string{"Let me", " think."},
			Text:      Words("Hello there, world."),
		}}})
		got := chunks(t, model(t, srv), req)
		want := []llm.Chunk{
			{Reasoning: "Let me"}, {Reasoning: " think."},
			{Text: "Hello"}, {Text: " there,"}, {Text: " world."},
			{FinishReason: "stop"},
			{Usage: &llm.Usage{InputTokens: 10, OutputTokens: 5, ReasoningTokens: 2}},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("chunks =\n%s\nwant\n%s", show(got), show(want))
		}
		reqs := srv.Requests()
		if len(reqs) != 1 || reqs[0].APIKey() != TestKey {
			t.Fatalf("requests %d, key %q: want one request carrying the key", len(reqs), reqs[0].APIKey())
		}
		if reqs[0].Body["stream"] != true {
			t.Errorf("request body stream = %v, want true", reqs[0].Body["stream"])
		}
	})

	t.Run("cached input tokens", func(t *testing.T) {
		t.Parallel()
		srv := a.newServer(t, Options{Replies: []Reply{{
			Text:  Words("Hi."),
			Usage: &llm.Usage{InputTokens: 120, OutputTokens: 1, CachedInputTokens: 100},
		}}})
		var acc llm.Accumulator
		for _, c := range chunks(t, model(t, srv), req) {
			acc.Add(c)
		}
		want := llm.Usage{InputTokens: 120, OutputTokens: 1, CachedInputTokens: 100}
		if u := acc.Usage(); u == nil || *u != want {
			t.Errorf("usage %+v, want %+v: every input token counted, the cache's among them", u, want)
		}
	})

	t.Run("tool call deltas split across chunks", func(t *testing.T) {
		t.Parallel()
		srv := a.newServer(t, Options{Replies: []Reply{{
			Text: []string{"Checking."},
			ToolCalls: []ToolCall{
				{ID: "call_a", Name: "get_current_time", Args: []string{`{"time`, `zone": "Asia/`, `Tokyo"}`}},
				{ID: "call_b", Name: "calculator", Args: []string{`{"expression":`, ` "2+2"}`}},
			},
		}}})
		got := chunks(t, model(t, srv), req)
		var acc llm.Accumulator
		var deltas []llm.ToolCallDelta
		for _, c := range got {
			acc.Add(c)
			if c.ToolCall != nil {
				deltas = append(deltas, *c.ToolCall)
			}
		}
		wantDeltas := []llm.ToolCallDelta{
			{Index: 0, ID: "call_a", Name: "get_current_time"},
			{Index: 0, ArgsDelta: `{"time`}, {Index: 0, ArgsDelta: `zone": "Asia/`}, {Index: 0, ArgsDelta: `Tokyo"}`},
			{Index: 1, ID: "call_b", Name: "calculator"},
			{Index: 1, ArgsDelta: `{"expression":`}, {Index: 1, ArgsDelta: ` "2+2"}`},
		}
		if !reflect.DeepEqual(deltas, wantDeltas) {
			t.Errorf("deltas =\n%+v\nwant\n%+v", deltas, wantDeltas)
		}
		wantCalls := []llm.ToolCall{
			{ID: "call_a", Name: "get_current_time", Arguments: json.RawMessage(`{"timezone": "Asia/Tokyo"}`)},
			{ID: "call_b", Name: "calculator", Arguments: json.RawMessage(`{"expression": "2+2"}`)},
		}
		if calls := acc.ToolCalls(); !reflect.DeepEqual(calls, wantCalls) {
			t.Errorf("assembled calls = %s, want %s", show(calls), show(wantCalls))
		}
		if acc.Text() != "Checking." || acc.FinishReason() != "tool_calls" {
			t.Errorf("text %q finish %q, want Checking. and tool_calls", acc.Text(), acc.FinishReason())
		}
	})

	t.Run("finish reason length", func(t *testing.T) {
		t.Parallel()
		srv := a.newServer(t, Options{Replies: []Reply{{Text: []string{"cut"}, FinishReason: "length"}}})
		acc, err := llm.Collect(stream(t, model(t, srv), req))
		if err != nil || acc.FinishReason() != "length" {
			t.Errorf("finish %q err %v, want length", acc.FinishReason(), err)
		}
	})

	t.Run("finish reasons", func(t *testing.T) {
		t.Parallel()
		// The Anthropic fake translates llm finish reasons to its
		// stop_reason; every adapter must translate them back.
		for _, reason := range []string{"stop", "tool_calls", "length", "content_filter"} {
			t.Run(reason, func(t *testing.T) {
				t.Parallel()
				srv := a.newServer(t, Options{Replies: []Reply{{Text: []string{"x"}, FinishReason: reason}}})
				acc, err := llm.Collect(stream(t, model(t, srv), req))
				if err != nil || acc.FinishReason() != reason {
					t.Errorf("finish %q (%v), want %q", acc.FinishReason(), err, reason)
				}
			})
		}
	})

	t.Run("model and token cap", func(t *testing.T) {
		t.Parallel()
		srv := a.newServer(t, Options{})
		m := model(t, srv)
		stream(t, m, req).Close()
		stream(t, m, llm.Request{Model: "other-model", MaxTokens: 64, Messages: req.Messages}).Close()
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		if got := reqs[0].Body["model"]; got != a.Model {
			t.Errorf("a request naming no model asked for %v, want the configured %s", got, a.Model)
		}
		if b := reqs[1].Body; b["model"] != "other-model" || b["max_tokens"] != 64.0 {
			t.Errorf("model %v max_tokens %v, want the request's other-model and 64", b["model"], b["max_tokens"])
		}
	})

	t.Run("invalid request refused before sending", func(t *testing.T) {
		t.Parallel()
		srv := a.newServer(t, Options{})
		m := model(t, srv)
		for _, r := range []llm.Request{
			{Messages: []llm.Message{{Role: "robot", Content: "hi"}}},
			{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Type: "audio"}}}}},
			{Messages: req.Messages, Tools: []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`"no"`)}}},
			{Messages: req.Messages, Tools: []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}},
		} {
			_, err := m.Stream(t.Context(), r)
			if lerr, ok := err.(*llm.Error); !ok || lerr.Code != llm.CodeBadRequest || !strings.HasPrefix(lerr.Message, "invalid model request: ") {
				t.Errorf("%+v: err = %v, want %s, invalid model request", r, err, llm.CodeBadRequest)
			}
		}
		if srv.Count() != 0 {
			t.Errorf("%d requests sent, want none", srv.Count())
		}
	})

	t.Run("status errors", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			status int
			code   string
		}{
			{400, llm.CodeBadRequest},
			{401, llm.CodeUnauthorized},
			{403, llm.CodeUnauthorized},
			{404, llm.CodeBadRequest},
			{422, llm.CodeBadRequest},
			{429, llm.CodeRateLimited},
			{500, llm.CodeUnavailable},
			{502, llm.CodeUnavailable},
			{503, llm.CodeUnavailable},
			{529, llm.CodeUnavailable},
		}
		for _, tt := range tests {
			t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
				t.Parallel()
				srv := a.newServer(t, Options{Reply: func(r Request) Reply {
					rep := Reply{Fail: FailStatus, Status: tt.status, Header: http.Header{"Retry-After": {"7"}}}
					if tt.status != 401 && tt.status != 403 { // those quote the key by default
						rep.ErrorMessage = "something about key " + r.APIKey() + " went wrong"
					}
					return rep
				}})
				_, err := model(t, srv).Stream(t.Context(), req)
				lerr := wantCode(t, err, tt.code)
				if lerr.Status != tt.status {
					t.Errorf("Status = %d, want %d", lerr.Status, tt.status)
				}
				if lerr.RetryAfter != 7*time.Second {
					t.Errorf("RetryAfter = %v, want 7s from the header", lerr.RetryAfter)
				}
				if tt.code != llm.CodeUnauthorized && !strings.Contains(lerr.Message, "went wrong") {
					t.Errorf("message %q lacks the provider's explanation", lerr.Message)
				}
				if host := strings.TrimPrefix(srv.URL, "http://"); !strings.Contains(lerr.Message, host) {
					t.Errorf("message %q does not name the provider %s", lerr.Message, host)
				}
			})
		}
	})

	t.Run("html error page", func(t *testing.T) {
		t.Parallel()
		srv := a.newServer(t, Options{Replies: []Reply{{
			Fail: FailStatus, Status: 502, RawErrorBody: "<html><body>502 Bad Gateway</body></html>",
		}}})
		_, err := model(t, srv).Stream(t.Context(), req)
		if lerr := wantCode(t, err, llm.CodeUnavailable); lerr.Status != 502 || strings.Contains(lerr.Message, "<html>") {
			t.Errorf("error %v: want status 502 and no HTML in the message", lerr)
		}
	})

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		closed := httptest.NewServer(http.NotFoundHandler())
		closed.Close()
		m, err := a.NewModel(closed.URL, TestKey, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Stream(t.Context(), req)
		if lerr := wantCode(t, err, llm.CodeUnavailable); !lerr.Retryable() {
			t.Errorf("connection refused is not retryable: %v", lerr)
		}
	})

	t.Run("broken streams", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name string
			fail Failure
			code string
		}{
			{"connection cut mid-stream", FailCut, llm.CodeStreamCut},
			{"clean end without end marker", FailNoEnd, llm.CodeStreamCut},
			{"malformed event", FailMalformed, llm.CodeBadStream},
			{"error event", FailErrorEvent, llm.CodeUnavailable},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				srv := a.newServer(t, Options{Replies: []Reply{{
					Text: Words("one two three four five six"), Fail: tt.fail, FailAfter: 4,
					ErrorMessage: "overloaded, key " + TestKey,
				}}})
				s := stream(t, model(t, srv), req)
				acc, err := llm.Collect(s)
				if acc.Text() == "" {
					t.Error("no text before the failure")
				}
				if acc.FinishReason() != "" || acc.Usage() != nil {
					t.Errorf("finish %q usage %v: a broken stream must not look finished", acc.FinishReason(), acc.Usage())
				}
				lerr := wantCode(t, err, tt.code)
				if tt.fail == FailErrorEvent && !strings.Contains(lerr.Message, "failed mid-answer: overloaded, key [redacted]") {
					t.Errorf("message %q does not give the provider's own, scrubbed of the key", lerr.Message)
				}
				if tt.code == llm.CodeStreamCut && !errors.Is(err, llm.ErrStreamCut) {
					t.Errorf("err %v does not wrap llm.ErrStreamCut", err)
				}
				if s.Next() {
					t.Error("Next after the error = true")
				}
			})
		}
	})

	t.Run("cancel mid-stream stops the upstream request", func(t *testing.T) {
		t.Parallel()
		srv := a.newServer(t, Options{Replies: []Reply{{Text: Words("one two three"), Fail: FailStall, FailAfter: 4}}})
		ctx, cancel := context.WithCancel(t.Context())
		s, err := model(t, srv).Stream(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if !s.Next() { // a text chunk the fake streams before it stalls
			t.Fatalf("stream ended early: %v", s.Err())
		}
		cancel()
		if s.Next() {
			t.Fatalf("Next after cancel = true (%+v)", s.Chunk())
		}
		if !errors.Is(s.Err(), context.Canceled) {
			t.Errorf("Err = %v, want context.Canceled", s.Err())
		}
		waitGone(t, srv)
	})

	t.Run("close mid-stream stops the upstream request", func(t *testing.T) {
		t.Parallel()
		srv := a.newServer(t, Options{Replies: []Reply{{Text: Words("one two three"), Fail: FailStall, FailAfter: 4}}})
		s := stream(t, model(t, srv), req)
		if !s.Next() {
			t.Fatalf("no first chunk: %v", s.Err())
		}
		s.Close()
		s.Close()
		waitGone(t, srv)
	})

	t.Run("cancel before the provider answers", func(t *testing.T) {
		t.Parallel()
		arrived := make(chan struct{}, 1)
		srv := a.newServer(t, Options{
			Replies:   []Reply{{Fail: FailHang}},
			OnRequest: func(Request) { arrived <- struct{}{} },
		})
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			<-arrived
			cancel()
		}()
		if _, err := model(t, srv).Stream(ctx, req); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		waitGone(t, srv)
	})

	t.Run("timeout before the provider answers", func(t *testing.T) {
		t.Parallel()
		srv := a.newServer(t, Options{Replies: []Reply{{Fail: FailHang}}})
		m, err := a.NewModel(srv.URL, TestKey, -1, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Stream(t.Context(), req)
		if lerr := wantCode(t, err, llm.CodeTimeout); !strings.Contains(lerr.Message, "50ms") {
			t.Errorf("message %q does not say how long it waited", lerr.Message)
		}
		if errors.Is(err, context.Canceled) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err %v: a timeout must read as DeadlineExceeded, never as the caller's cancellation", err)
		}
		// On a loaded machine 50ms can pass before the request is even
		// written: then nothing reached the fake and nothing is left to
		// cancel; a request that did arrive must be cancelled.
		if len(srv.Requests()) > 0 {
			waitGone(t, srv)
		}
	})

	t.Run("deadline mid-stream", func(t *testing.T) {
		t.Parallel()
		srv := a.newServer(t, Options{Replies: []Reply{{Text: Words("one"), Fail: FailStall, FailAfter: 4}}})
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		// On a loaded machine the deadline may pass before the stream starts;
		// either way the caller must see a timeout.
		s, err := model(t, srv).Stream(ctx, req)
		if err == nil {
			_, err = llm.Collect(s)
		}
		wantCode(t, err, llm.CodeTimeout)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err %v does not wrap context.DeadlineExceeded", err)
		}
		waitGone(t, srv)
	})

	t.Run("retries", func(t *testing.T) {
		t.Parallel()
		quick := http.Header{"Retry-After-Ms": {"1"}} // keeps the test fast; the policy is tested in llm
		tests := []struct {
			name      string
			first     Reply
			wantCalls int
			wantCode  string
		}{
			{"429 then success", Reply{Fail: FailStatus, Status: 429, Header: quick}, 2, ""},
			{"503 then success", Reply{Fail: FailStatus, Status: 503, Header: quick}, 2, ""},
			{"401 is not retried", Reply{Fail: FailStatus, Status: 401, Header: quick}, 1, llm.CodeUnauthorized},
			{"400 is not retried", Reply{Fail: FailStatus, Status: 400, Header: quick}, 1, llm.CodeBadRequest},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				srv := a.newServer(t, Options{Replies: []Reply{tt.first, TextReply("recovered")}})
				m, err := a.NewModel(srv.URL, TestKey, 2, 0)
				if err != nil {
					t.Fatal(err)
				}
				s, err := m.Stream(t.Context(), req)
				if srv.Count() != tt.wantCalls {
					t.Errorf("upstream calls = %d, want %d", srv.Count(), tt.wantCalls)
				}
				if tt.wantCode != "" {
					wantCode(t, err, tt.wantCode)
					return
				}
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				if acc, err := llm.Collect(s); err != nil || acc.Text() != "recovered" {
					t.Errorf("after retry: %q, %v", acc.Text(), err)
				}
			})
		}
	})
}

// IgnoresEnvironment checks that the adapter reads no configuration from
// the environment: the SDKs' client constructors pick up API keys, base
// URLs and organisations from variables such as OPENAI_API_KEY and
// ANTHROPIC_BASE_URL, which would send a key meant for one provider to
// another's base URL. It sets every such variable of every provider, so
// the test calling it must not be parallel.
func IgnoresEnvironment(t *testing.T, a Adapter) {
	t.Helper()
	for k, v := range map[string]string{
		"OPENAI_API_KEY":       "sk-from-the-environment",
		"OPENAI_BASE_URL":      "http://127.0.0.1:1/v1",
		"OPENAI_ORG_ID":        "org-env",
		"OPENAI_PROJECT_ID":    "proj-env",
		"ANTHROPIC_API_KEY":    "sk-ant-from-the-environment",
		"ANTHROPIC_AUTH_TOKEN": "token-from-the-environment",
		"ANTHROPIC_BASE_URL":   "http://127.0.0.1:1",
	} {
		t.Setenv(k, v)
	}
	srv := a.newServer(t, Options{})
	m, err := a.NewModel(srv.URL, "", -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Stream(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatalf("Stream: %v (did it follow a base URL from the environment?)", err)
	}
	s.Close()
	got := srv.Requests()[0]
	if key := got.APIKey(); key != "" {
		t.Errorf("a credential from the environment was sent: %q", key)
	}
	for _, h := range []string{"OpenAI-Organization", "OpenAI-Project"} {
		if v := got.Header.Get(h); v != "" {
			t.Errorf("%s from the environment was sent: %q", h, v)
		}
	}
}

// BenchmarkAdapter measures the adapter's whole client side of one
// completion: the request, then N text chunks read to the end. The
// upstream replays a body recorded from the adapter's fake (the real wire
// format) in one write, so the time is the adapter's and the HTTP stack's,
// not the fake's pacing. It reports ns/chunk beside ns/op.
func BenchmarkAdapter(b *testing.B, a Adapter) {
	const tokens = 200
	rec := httptest.NewRecorder()
	fake := a.NewHandler(Options{Tokens: tokens, DiscardRequests: true})
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
	fake.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, a.Path, strings.NewReader(body)))
	recorded := rec.Body.Bytes()
	if n := bytes.Count(recorded, []byte("data: ")); n < tokens {
		b.Fatalf("recorded %d events, want at least %d", n, tokens)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(recorded)
	}))
	b.Cleanup(srv.Close)
	m, err := a.NewModel(srv.URL, "sk-bench", -1, 0)
	if err != nil {
		b.Fatal(err)
	}
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	b.ReportAllocs()
	for b.Loop() {
		s, err := m.Stream(b.Context(), req)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for s.Next() {
			n++
		}
		if err := s.Err(); err != nil || n != tokens+2 { // the text, the finish reason, the usage
			b.Fatalf("%d chunks, err %v", n, err)
		}
		s.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tokens), "ns/chunk")
}

// BenchmarkAdapterChunked is BenchmarkAdapter with the body framed as a
// streaming provider frames it, a chunk of the chunked body per event, as
// the bench's fake upstream sends them; the whole response is written in
// one write, so the time is the client's (a.NewModel gives the HTTP client
// under test), not the upstream's. The connection closes after each
// response.
func BenchmarkAdapterChunked(b *testing.B, a Adapter) {
	const tokens = 200
	rec := httptest.NewRecorder()
	fake := a.NewHandler(Options{Tokens: tokens, DiscardRequests: true})
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
	fake.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, a.Path, strings.NewReader(body)))
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
	events := 0
	for ev := range bytes.SplitAfterSeq(rec.Body.Bytes(), []byte("\n\n")) {
		if len(ev) > 0 {
			resp = fmt.Appendf(resp, "%x\r\n%s\r\n", len(ev), ev)
			events++
		}
	}
	resp = append(resp, "0\r\n\r\n"...)
	if events < tokens {
		b.Fatalf("recorded %d events, want at least %d", events, tokens)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		conn.Write(resp)
		conn.Close()
	}))
	b.Cleanup(srv.Close)
	m, err := a.NewModel(srv.URL, "sk-bench", -1, 0)
	if err != nil {
		b.Fatal(err)
	}
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	b.ReportAllocs()
	for b.Loop() {
		s, err := m.Stream(b.Context(), req)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for s.Next() {
			n++
		}
		if err := s.Err(); err != nil || n != tokens+2 { // the text, the finish reason, the usage
			b.Fatalf("%d chunks, err %v", n, err)
		}
		s.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tokens), "ns/chunk")
}

func stream(t *testing.T, m llm.Model, req llm.Request) llm.Stream {
	t.Helper()
	s, err := m.Stream(t.Context(), req)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func chunks(t *testing.T, m llm.Model, req llm.Request) []llm.Chunk {
	t.Helper()
	s := stream(t, m, req)
	var out []llm.Chunk
	for s.Next() {
		out = append(out, s.Chunk())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return out
}

// wantCode checks that err is an *llm.Error with code, and that no text
// reachable from err contains the API key.
func wantCode(t *testing.T, err error, code string) *llm.Error {
	t.Helper()
	NoSecret(t, err, TestKey)
	var lerr *llm.Error
	if !errors.As(err, &lerr) {
		t.Fatalf("err = %v (%T), want *llm.Error %s", err, err, code)
	}
	if lerr.Code != code {
		t.Fatalf("code = %s, want %s (%v)", lerr.Code, code, err)
	}
	t.Logf("error: %v", err)
	if lerr.Message == "" {
		t.Errorf("empty message")
	}
	return lerr
}

// NoSecret fails t if secret appears in the text of err or of any error it
// wraps, formatted any way: error texts reach logs, run records and users.
func NoSecret(t testing.TB, err error, secret string) {
	t.Helper()
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		for _, s := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
			if strings.Contains(s, secret) {
				t.Errorf("the API key appears in an error text: %s", s)
				return
			}
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
}

// waitGone waits until the fake saw its (only) request's client go away.
func waitGone(t *testing.T, srv *Server) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the fake")
	}
	select {
	case <-reqs[len(reqs)-1].Gone:
	case <-time.After(10 * time.Second): // a guard against hanging, not a synchronisation
		t.Fatal("the upstream request was never cancelled")
	}
}

func show(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
