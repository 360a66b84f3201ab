package llmtest

import (
	"net/http/httptest"
	"testing"

	"github.com/agentchat/agentchat/internal/llm/fakeupstream"
)

// Names from fakeupstream, so tests script a fake with one import.
type (
	Failure    = fakeupstream.Failure
	ToolCall   = fakeupstream.ToolCall
	Reply      = fakeupstream.Reply
	Options    = fakeupstream.Options
	Request    = fakeupstream.Request
	Embeddings = fakeupstream.Embeddings
)

// Failures a Reply can script; see fakeupstream.
const (
	FailNone       = fakeupstream.FailNone
	FailStatus     = fakeupstream.FailStatus
	FailHang       = fakeupstream.FailHang
	FailStall      = fakeupstream.FailStall
	FailCut        = fakeupstream.FailCut
	FailMalformed  = fakeupstream.FailMalformed
	FailNoEnd      = fakeupstream.FailNoEnd
	FailErrorEvent = fakeupstream.FailErrorEvent
)

// TextReply is a reply streaming s word by word.
func TextReply(s string) Reply { return fakeupstream.TextReply(s) }

// Words splits s into tokens the way models stream them; see fakeupstream.Words.
func Words(s string) []string { return fakeupstream.Words(s) }

// Tokens returns n text tokens of filler prose.
func Tokens(n int) []string { return fakeupstream.Tokens(n) }

// OpenAIHandler returns a fake OpenAI-compatible upstream serving POST …/chat/completions.
func OpenAIHandler(opts Options) *fakeupstream.Handler { return fakeupstream.OpenAIHandler(opts) }

// AnthropicHandler returns a fake Anthropic upstream serving POST …/v1/messages.
func AnthropicHandler(opts Options) *fakeupstream.Handler {
	return fakeupstream.AnthropicHandler(opts)
}

// Server is a fake upstream served by httptest on a local port.
type Server struct {
	*fakeupstream.Handler
	// URL is the server's base URL, e.g. http://127.0.0.1:41234.
	URL string
}

// NewOpenAIServer starts a fake OpenAI-compatible upstream, closed when the test ends.
// Point the adapter's BaseURL at URL+"/v1".
func NewOpenAIServer(t testing.TB, opts Options) *Server {
	return serve(t, fakeupstream.OpenAIHandler(opts))
}

// NewAnthropicServer starts a fake Anthropic upstream, closed when the test ends.
// Point the adapter's BaseURL at URL.
func NewAnthropicServer(t testing.TB, opts Options) *Server {
	return serve(t, fakeupstream.AnthropicHandler(opts))
}

func serve(t testing.TB, h *fakeupstream.Handler) *Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close() // release hanging handlers first: httptest waits for them
		srv.Close()
	})
	return &Server{Handler: h, URL: srv.URL}
}
