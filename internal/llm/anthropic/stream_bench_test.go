package anthropic_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
)

// BenchmarkStream measures the adapter's whole client side of one
// completion: the request, then N text chunks read to the end. The
// upstream replays a body recorded from llmtest's fake (the real wire
// format) in one write, so the time is the adapter's and the HTTP
// stack's, not the fake's pacing.
func BenchmarkStream(b *testing.B) {
	const tokens = 200
	rec := httptest.NewRecorder()
	fake := llmtest.AnthropicHandler(llmtest.Options{Tokens: tokens, DiscardRequests: true})
	body := `{"model":"m","stream":true,"messages":[]}`
	fake.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(body)))
	recorded := rec.Body.Bytes()
	if n := bytes.Count(recorded, []byte("data: ")); n < tokens {
		b.Fatalf("recorded %d events, want at least %d", n, tokens)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(recorded)
	}))
	b.Cleanup(srv.Close)
	m, err := newModel(srv.URL, "sk-bench", -1, 0)
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
		if err := s.Err(); err != nil || n != tokens+2 {
			b.Fatalf("%d chunks, err %v", n, err)
		}
		s.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tokens), "ns/chunk")
}
