package httpapi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/dialect/agui/aguitest"
	"github.com/agentchat/agentchat/internal/tool/builtin"
)

// TestAGUIThreadIDsPerPrincipal: a threadId names the principal's own
// thread, created on first use, whatever others chose: two tenants and two
// users of one tenant using one threadId each get a thread of their own, and
// every answer and frame echoes the threadId the client sent.
func TestAGUIThreadIDsPerPrincipal(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, o options) {
		e := setup(t, o)
		const thread = "shared-name"
		tokens := []string{alice, bob, eve}
		tasks := map[string]string{}
		for i, tok := range tokens {
			got := e.call(req{method: "POST", path: "/api/v1/agent/runs", token: tok,
				body: input(thread, fmt.Sprintf("run-%d", i), userMsg("u1", "note from "+tok))}, 202)
			if got["threadId"] != thread || got["created"] != true {
				t.Fatalf("%s: 202 %v", tok, got)
			}
			tasks[tok] = got["taskId"].(string)
			// Wait for the run to end: a thread has one active run at a time.
			rd, resp := e.aguiStream(req{method: "GET", path: "/api/v1/agent/runs/" + thread + "/events", token: tok})
			readAGUI(t, rd, false, runEnds(1))
			resp.Body.Close()
		}
		// A streamed run on the same name continues each one's own thread.
		for i, tok := range tokens {
			evs := e.aguiRun(tok, input(thread, fmt.Sprintf("again-%d", i), userMsg("u2", "second from "+tok)))
			for _, ev := range evs {
				if v, ok := ev.Data["threadId"]; ok && v != thread {
					t.Fatalf("%s: %s carries threadId %v", tok, ev.Type(), v)
				}
			}
		}
		convs := map[string]bool{}
		for _, tok := range tokens {
			run := e.call(req{method: "GET", path: "/v1/agent/runs/" + tasks[tok], token: tok}, 200)
			convs[run["conversationId"].(string)] = true

			// The history and the events stream find the principal's thread by its name.
			h := e.call(req{method: "GET", path: "/api/v1/agent/history?threadId=" + thread, token: tok}, 200)
			if h["threadId"] != thread {
				t.Fatalf("%s: history threadId %v", tok, h["threadId"])
			}
			var users []string
			for _, m := range h["messages"].([]any) {
				if m := m.(map[string]any); m["role"] == "user" {
					users = append(users, m["content"].(string))
				}
			}
			if want := []string{"note from " + tok, "second from " + tok}; fmt.Sprint(users) != fmt.Sprint(want) {
				t.Fatalf("%s: history users %q, want %q", tok, users, want)
			}
			rd, resp := e.aguiStream(req{method: "GET", path: "/api/v1/agent/runs/" + thread + "/events", token: tok})
			evs := readAGUI(t, rd, false, runEnds(2))
			resp.Body.Close()
			aguitest.Verify(t, evs)
			for _, ev := range evs {
				if ev.Str("threadId") != thread {
					t.Fatalf("%s: %s carries threadId %q", tok, ev.Type(), ev.Str("threadId"))
				}
			}
		}
		if len(convs) != len(tokens) {
			t.Fatalf("%d principals share %d threads", len(tokens), len(convs))
		}
		// A name nobody used is unknown to the stream, the history and a resume.
		e.apiError(req{method: "GET", path: "/api/v1/agent/runs/never-used/events", token: alice}, 404, "thread_not_found")
		e.apiError(req{method: "GET", path: "/api/v1/agent/history?threadId=never-used", token: alice}, 404, "thread_not_found")
		// A server-named thread keeps its id: the 202 names it, and it is found by it.
		got := e.call(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: input("", "", userMsg("u1", "hi"))}, 202)
		named := got["threadId"].(string)
		rd, resp := e.aguiStream(req{method: "GET", path: "/api/v1/agent/runs/" + named + "/events", token: alice})
		readAGUI(t, rd, false, runEnds(1))
		resp.Body.Close()
		again := e.call(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: input(named, "", userMsg("u2", "again"))}, 202)
		if again["threadId"] != named || again["created"] != false {
			t.Fatalf("server-named thread: %v then %v", got, again)
		}
		// And another principal using that id gets a thread of its own.
		other := e.call(req{method: "POST", path: "/api/v1/agent/runs", token: eve, body: input(named, "", userMsg("u1", "mine"))}, 202)
		if other["threadId"] != named || other["created"] != true {
			t.Fatalf("eve on alice's thread id: %v", other)
		}
	})
}

// TestAGUIReplayedContinuationEchoesRunID: a resume request streams the
// continuation under the runId it sent, also when the continuation already
// happened (the decision came through another door, or the same resume is
// sent again) or ends without resuming (an expired interrupt cancelled).
func TestAGUIReplayedContinuationEchoesRunID(t *testing.T) {
	t.Parallel()
	runIDs := func(t *testing.T, evs []aguitest.Event, want string) {
		t.Helper()
		for _, ev := range evs {
			if typ := ev.Type(); (typ == "RUN_STARTED" || typ == "RUN_FINISHED" || typ == "RUN_ERROR" && ev.Str("runId") != "") && ev.Str("runId") != want {
				t.Fatalf("%s carries runId %q, want %q: %v", typ, ev.Str("runId"), want, evTypes(evs))
			}
		}
	}
	t.Run("decided elsewhere", func(t *testing.T) {
		t.Parallel()
		h := newHook(t)
		e := setup(t, options{builtin: builtin.Config{Webhook: builtin.WebhookConfig{URL: h.srv.URL}}})
		_, in := interrupted(t, e, "t-replay", "run-1")
		id := in["id"].(string)
		e.call(req{method: "POST", path: "/v1/agent/confirmations/" + id, token: alice, body: map[string]any{"decision": "approve"}}, 200)
		for _, runID := range []string{"run-2", "run-3"} {
			evs := e.aguiRun(alice, resumeInput("t-replay", runID, id, "resolved", map[string]any{"approved": true}))
			runIDs(t, evs, runID)
			if len(ofType(evs, "TOOL_CALL_RESULT")) != 1 {
				t.Fatalf("replayed continuation %v", evTypes(evs))
			}
		}
		if h.calls() != 1 {
			t.Fatalf("the webhook ran %d times", h.calls())
		}
	})
	t.Run("expired and cancelled", func(t *testing.T) {
		t.Parallel()
		e := setup(t, options{confirmTTL: 50 * time.Millisecond})
		_, in := interrupted(t, e, "t-exp", "run-1")
		rd, resp := e.aguiStream(req{method: "GET", path: "/api/v1/agent/runs/t-exp/events", token: alice})
		readAGUI(t, rd, false, runEnds(2))
		resp.Body.Close()
		evs := e.aguiRun(alice, resumeInput("t-exp", "run-2", in["id"].(string), "cancelled", nil))
		runIDs(t, evs, "run-2")
	})
}

// threadConversation is the id of the conversation a principal's threadId
// names: the conversation of the run that wrote the thread's first message.
func (e *env) threadConversation(token, thread string) string {
	e.t.Helper()
	h := e.call(req{method: "GET", path: "/api/v1/agent/history?threadId=" + thread, token: token}, 200)
	msgs, _ := h["messages"].([]any)
	if len(msgs) == 0 {
		e.t.Fatalf("thread %s has no messages", thread)
	}
	task, _ := msgs[0].(map[string]any)["taskId"].(string)
	return e.call(req{method: "GET", path: "/v1/agent/runs/" + task, token: token}, 200)["conversationId"].(string)
}
