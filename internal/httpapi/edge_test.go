package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/tool/builtin"
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

// TestSlowBody: a request body that does not arrive in time is answered
// 408 and its connection closed, rather than holding them forever.
func TestSlowBody(t *testing.T) {
	t.Parallel()
	e := setup(t, options{bodyTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Bounds the test, not the server: without the fix it would hang.
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "POST /v1/conversations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n{\"title\":", alice)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(raw), `"body_timeout"`) {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
}

// TestStreamOutlivesBodyTimeout: once its body is read, a streaming POST
// goes on past the body's deadline (here: waiting for a person, with pings
// spanning several deadlines, then finishing).
func TestStreamOutlivesBodyTimeout(t *testing.T) {
	t.Parallel()
	hook := newFeishu(t)
	const bodyTimeout = 50 * time.Millisecond
	e := setup(t, options{bodyTimeout: bodyTimeout, ping: 20 * time.Millisecond,
		builtin: builtin.Config{Feishu: builtin.FeishuConfig{WebhookURL: hook.srv.URL}}})
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": `Send a Feishu message saying "later"`}})
	defer resp.Body.Close()
	aw := last(readNative(t, rd, "tool.awaiting_input"))
	var first time.Time
	for {
		f, err := rd.Next()
		if err != nil {
			t.Fatalf("the stream ended while waiting: %v", err)
		}
		if f.Event != "ping" {
			continue
		}
		var p struct {
			Data struct {
				At time.Time `json:"at"`
			} `json:"data"`
		}
		f.JSON(t, &p)
		if first.IsZero() {
			first = p.Data.At
		}
		if p.Data.At.Sub(first) > 4*bodyTimeout {
			break
		}
	}
	e.call(req{method: "POST", path: "/v1/agent/confirmations/" + aw.Data["confirmationId"].(string), token: alice, body: map[string]any{"decision": "approve"}}, 200)
	if end := last(readNative(t, rd, "")); end.Event != "agent.end" || end.Data["status"] != "succeeded" {
		t.Fatalf("the stream ends with %v", end)
	}
}
