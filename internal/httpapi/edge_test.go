package httpapi_test

import (
	"strings"
	"testing"
)

// TestRequestFieldsRefusedBeforeTheStream: a request a run could not serve
// is refused with a 400 naming the field, before any stream starts.
func TestRequestFieldsRefusedBeforeTheStream(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	for _, tt := range []struct {
		name, path string
		body       any
		field      string
	}{
		{"native unknown engine", "/v1/agent/chat", map[string]any{"input": "hi", "engine": "bogus"}, "engine"},
		{"native malformed engine", "/v1/agent/chat", map[string]any{"input": "hi", "engine": "Bad Engine"}, "engine"},
		{"AI SDK unknown engine", "/v1/agent/chat?format=vercel-ai", map[string]any{"id": "c-eng", "engine": "bogus",
			"messages": []any{userMessage("m1", "hi")}}, "engine"},
		{"AI SDK empty chat id", "/v1/agent/chat?format=vercel-ai", map[string]any{"id": "",
			"messages": []any{userMessage("m1", "hi")}}, "id"},
		{"AI SDK chat id too long", "/v1/agent/chat?format=vercel-ai", map[string]any{"id": strings.Repeat("c", 129),
			"messages": []any{userMessage("m1", "hi")}}, "id"},
		{"AG-UI unknown engine", "/api/v1/agent/runs", map[string]any{"threadId": "t-eng", "forwardedProps": map[string]any{"engine": "bogus"},
			"messages": []any{userMsg("u1", "hi")}}, "forwardedProps.engine"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := *e
			e.t = t
			errObj := e.apiError(req{method: "POST", path: tt.path, token: alice, body: tt.body, header: map[string]string{"Accept": "text/event-stream"}}, 400, "invalid_field")
			if msg := errObj["message"].(string); !strings.Contains(msg, `"`+tt.field+`"`) {
				t.Errorf("message %q does not name %q", msg, tt.field)
			}
		})
	}
	// Nothing was started or created by the refused requests.
	if list := e.call(req{method: "GET", path: "/v1/conversations", token: alice}, 200)["conversations"].([]any); len(list) != 0 {
		t.Fatalf("refused requests left %d conversations", len(list))
	}
	// A known engine still works.
	if frames := e.chat(alice, map[string]any{"input": "hi", "engine": "local"}); last(frames).Data["status"] != "succeeded" {
		t.Fatalf("local engine: %v", last(frames).Data)
	}
}

// TestProbedLimits: limits a hostile client reached around.
func TestProbedLimits(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	long := strings.Repeat("é", 201)
	// A title is at most 200 characters however the conversation is made.
	e.apiError(req{method: "POST", path: "/v1/conversations", token: alice, body: map[string]any{"title": long}}, 422, "invalid_field")
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hi", "title": long}}, 422, "invalid_field")
	e.apiError(req{method: "POST", path: "/v1/agent/chat?format=vercel-ai", token: alice,
		body: map[string]any{"id": "c-long", "title": long, "messages": []any{userMessage("m1", "hi")}}}, 422, "invalid_field")
	// One request answers a bounded number of interrupts or approvals: each
	// costs a lookup, and a body may hold thousands.
	many := make([]any, 65)
	for i := range many {
		many[i] = map[string]any{"interruptId": "01900000-0000-7000-8000-000000000000", "status": "cancelled"}
	}
	in := input("t-many", "r", userMsg("u", "hi"))
	in["resume"] = many
	e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: in}, 422, "invalid_resume")
	parts := make([]any, 65)
	for i := range parts {
		parts[i] = map[string]any{"type": "tool-x", "toolCallId": "k", "state": "approval-responded",
			"approval": map[string]any{"id": "01900000-0000-7000-8000-000000000000", "approved": true}}
	}
	e.apiError(req{method: "POST", path: "/v1/agent/chat?format=vercel-ai", token: alice,
		body: map[string]any{"id": "c-many", "messages": []any{userMessage("m1", "hi"), map[string]any{"id": "a1", "role": "assistant", "parts": parts}}}}, 422, "invalid_field")
	if list := e.call(req{method: "GET", path: "/v1/conversations", token: alice}, 200)["conversations"].([]any); len(list) != 0 {
		t.Fatalf("refused requests left %d conversations", len(list))
	}
}
