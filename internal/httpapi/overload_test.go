package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/fdbudget"
	"github.com/agentchat/agentchat/internal/tool"
)

// holdEngine runs every run until release is closed (or the run is stopped),
// telling running as each begins.
func holdEngine(running chan<- struct{}, release <-chan struct{}) func(*tool.Registry, engine.Engine) map[string]engine.Engine {
	return func(*tool.Registry, engine.Engine) map[string]engine.Engine {
		return map[string]engine.Engine{"hold": engineFunc(func(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome {
			running <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return engine.Outcome{Status: engine.StatusSucceeded}
		})}
	}
}

type engineFunc func(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome

func (f engineFunc) Execute(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome {
	return f(ctx, t, h)
}

// A chat beyond the runs the process may execute gets 503 overloaded with
// Retry-After at once, on every surface that starts runs; nothing is stored.
func TestChatBeyondCapacityIsOverloaded(t *testing.T) {
	t.Parallel()
	running, release := make(chan struct{}, 1), make(chan struct{})
	e := setup(t, options{maxExecutions: 1, engines: holdEngine(running, release),
		router: func(r *engine.Router) { r.Default = "hold" }})
	defer close(release)
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hold on"}})
	defer resp.Body.Close()
	readNative(t, rd, "agent.start")
	<-running
	for _, r := range []req{
		{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "one more"}},
		{method: "POST", path: "/v1/agent/chat?format=vercel-ai", token: bob, body: map[string]any{"id": "c1", "trigger": "submit-message",
			"messages": []any{map[string]any{"id": "m1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "hi"}}}}}},
		{method: "POST", path: "/api/v1/agent/runs", token: bob, body: map[string]any{"threadId": "t-overload", "runId": "r1",
			"messages": []any{map[string]any{"id": "m1", "role": "user", "content": "hi"}}, "tools": []any{}, "context": []any{}, "state": map[string]any{}, "forwardedProps": map[string]any{}}},
	} {
		resp := e.send(r)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("%s %s: status %d, Retry-After %q; want 503 and 1", r.method, r.path, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: eve, body: map[string]any{"input": "and another"}}, http.StatusServiceUnavailable, "overloaded")
	list := e.call(req{method: "GET", path: "/v1/conversations", token: eve}, http.StatusOK)
	if convs, _ := list["conversations"].([]any); len(convs) != 0 {
		t.Errorf("a refused chat stored conversations: %v", convs)
	}
}

// A connection beyond the open-files budget is answered at once, 503
// overloaded with Retry-After, and closed; /healthz is still answered
// there. Served connections go on as usual.
func TestConnectionBeyondBudgetIsOverloaded(t *testing.T) {
	t.Parallel()
	e := setup(t, options{budget: fdbudget.Budget{Limit: 100, Conns: 1, Overflow: 2}})
	// The served place is taken by a connection that keeps talking.
	held, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	ask := func(c net.Conn, path string) *http.Response {
		t.Helper()
		if _, err := c.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + alice + "\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	heldReader := bufio.NewReader(held)
	if _, err := held.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(heldReader, nil)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("served connection: %v %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)

	over, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	resp = ask(over, "/v1/conversations")
	var body struct {
		Error struct{ Code, Message, RequestID string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !resp.Close || body.Error.Code != "overloaded" {
		t.Fatalf("overflowing connection: status %d, Retry-After %q, close %v, body %+v", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Close, body)
	}
	over2, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer over2.Close()
	if resp := ask(over2, "/healthz"); resp.StatusCode != http.StatusOK || !resp.Close {
		t.Fatalf("/healthz on an overflowing connection: %d, close %v", resp.StatusCode, resp.Close)
	}
	// The served connection is still served.
	if _, err := held.Write([]byte("GET /v1/conversations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + alice + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(heldReader, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("served connection afterwards: %v %v", resp, err)
	}
}
