package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/llm/llmtest"
)

// treeMessages lists a conversation's messages (the active branch, or with
// all every message) as maps.
func (e *env) treeMessages(token, conv string, all bool) []map[string]any {
	e.t.Helper()
	path := "/v1/conversations/" + conv + "/messages?limit=100"
	if all {
		path += "&branch=all"
	}
	var out []map[string]any
	for _, m := range e.call(req{method: "GET", path: path, token: token}, 200)["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

func contentsOf(msgs []map[string]any) string {
	var out []string
	for _, m := range msgs {
		out = append(out, fmt.Sprint(m["content"]))
	}
	return strings.Join(out, "|")
}

func stringsOf(v any) []string {
	var out []string
	for _, id := range v.([]any) {
		out = append(out, id.(string))
	}
	return out
}

// upstreamContexts are the message contents each model request carried.
func upstreamContexts(up *llmtest.Server) []string {
	var out []string
	for _, r := range up.Requests() {
		var parts []string
		for _, m := range r.Body["messages"].([]any) {
			if m := m.(map[string]any); m["role"] != "system" {
				parts = append(parts, fmt.Sprint(m["content"]))
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out
}

// A person regenerates and edits through the native API: the older
// branches stay in the tree, the history shows the active branch with each
// message's parent and siblings, PUT …/active switches back, and the model
// sees only the active branch.
func TestMessageTree(t *testing.T) {
	t.Parallel()
	model, up := numberedModel(t)
	e := setup(t, options{model: model})
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "q1"}})
	readNative(t, rd, "")
	conv := resp.Header.Get("X-Conversation-ID")
	resp.Body.Close()
	first := e.treeMessages(alice, conv, false)
	if contentsOf(first) != "q1|Answer 1." || first[0]["parentId"] != nil || first[1]["parentId"] != first[0]["id"] {
		t.Fatalf("first turn %v", first)
	}
	u1, a1 := first[0]["id"].(string), first[1]["id"].(string)

	// Regenerate the answer: a sibling answer, the old one kept.
	frames := e.chat(alice, map[string]any{"conversationId": conv, "regenerate": map[string]any{"messageId": a1}})
	if last(frames).Data["status"] != "succeeded" {
		t.Fatalf("regenerate: %v", last(frames).Data)
	}
	active := e.treeMessages(alice, conv, false)
	if contentsOf(active) != "q1|Answer 2." || active[0]["id"] != u1 || active[1]["parentId"] != u1 {
		t.Fatalf("after regenerate %v", active)
	}
	a2 := active[1]["id"].(string)
	if got := stringsOf(active[1]["siblingIds"]); !slices.Equal(got, []string{a1, a2}) {
		t.Fatalf("answer siblings %v, want [%s %s]", got, a1, a2)
	}
	if all := e.treeMessages(alice, conv, true); contentsOf(all) != "q1|Answer 1.|Answer 2." {
		t.Fatalf("every message %v", contentsOf(all))
	}

	// Edit the question: a sibling first message, answered.
	frames = e.chat(alice, map[string]any{"conversationId": conv, "edit": map[string]any{"messageId": u1, "input": "q1 again"}})
	if last(frames).Data["status"] != "succeeded" {
		t.Fatalf("edit: %v", last(frames).Data)
	}
	active = e.treeMessages(alice, conv, false)
	if contentsOf(active) != "q1 again|Answer 3." || active[0]["parentId"] != nil {
		t.Fatalf("after edit %v", active)
	}
	if got := stringsOf(active[0]["siblingIds"]); len(got) != 2 || got[0] != u1 || got[1] != active[0]["id"] {
		t.Fatalf("question siblings %v", got)
	}

	// Back to the first question: its latest answer comes with it.
	c := e.call(req{method: "PUT", path: "/v1/conversations/" + conv + "/active", token: alice, body: map[string]any{"messageId": u1}}, 200)
	if c["activeLeafId"] != a2 {
		t.Fatalf("switched conversation %v, want leaf %s", c, a2)
	}
	if got := contentsOf(e.treeMessages(alice, conv, false)); got != "q1|Answer 2." {
		t.Fatalf("after switching back %q", got)
	}
	e.chat(alice, map[string]any{"conversationId": conv, "input": "q2"})
	if got := contentsOf(e.treeMessages(alice, conv, false)); got != "q1|Answer 2.|q2|Answer 4." {
		t.Fatalf("next turn %q", got)
	}
	// An explicit fork point: q3 follows the first answer.
	e.chat(alice, map[string]any{"conversationId": conv, "input": "q3", "parentId": a1})
	if got := contentsOf(e.treeMessages(alice, conv, false)); got != "q1|Answer 1.|q3|Answer 5." {
		t.Fatalf("fork %q", got)
	}
	// The model saw only the active branch each time.
	want := []string{"q1", "q1", "q1 again", "q1|Answer 2.|q2", "q1|Answer 1.|q3"}
	if got := upstreamContexts(up); !slices.Equal(got, want) {
		t.Fatalf("model contexts\n%q\nwant\n%q", got, want)
	}

	// Refusals.
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"conversationId": conv, "edit": map[string]any{"messageId": a1, "input": "x"}}}, 422, "message_not_editable")
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"conversationId": conv, "regenerate": map[string]any{"messageId": "nope"}}}, 404, "message_not_found")
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"conversationId": conv, "input": "x", "parentId": "nope"}}, 404, "message_not_found")
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"regenerate": map[string]any{"messageId": a1}}}, 422, "invalid_field")
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"conversationId": conv, "input": "x", "edit": map[string]any{"messageId": u1, "input": "y"}}}, 422, "invalid_field")
	e.apiError(req{method: "PUT", path: "/v1/conversations/" + conv + "/active", token: alice, body: map[string]any{"messageId": "nope"}}, 404, "message_not_found")
	e.apiError(req{method: "PUT", path: "/v1/conversations/" + conv + "/active", token: bob, body: map[string]any{"messageId": u1}}, 404, "conversation_not_found")
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: bob, body: map[string]any{"conversationId": conv, "regenerate": map[string]any{"messageId": a1}}}, 404, "conversation_not_found")
	e.apiError(req{method: "GET", path: "/v1/conversations/" + conv + "/messages?branch=some", token: alice}, 400, "invalid_field")
}

// An AG-UI client edits by sending a history that leaves the stored branch:
// the first user message that differs becomes a new version (a sibling) of
// the stored one, answered; the old branch stays in the tree, the history
// and the next turns follow the new one. A history that ends at the last
// question asks for its answer again. The model is sent the active branch
// only.
func TestAGUIEditBranches(t *testing.T) {
	t.Parallel()
	model, up := numberedModel(t)
	e := setup(t, options{model: model})
	const thread = "edit-thread"
	assistant := func(id, text string) map[string]any {
		return map[string]any{"id": id, "role": "assistant", "content": text}
	}
	e.aguiRun(alice, input(thread, "r1", userMsg("c-u1", "q1")))
	e.aguiRun(alice, input(thread, "r2", userMsg("c-u1", "q1"), assistant("c-a1", "Answer 1."), userMsg("c-u2", "q2")))
	var conv string
	for _, c := range e.call(req{method: "GET", path: "/v1/conversations", token: alice}, 200)["conversations"].([]any) {
		if c := c.(map[string]any); c["title"] == "q1" {
			conv = c["id"].(string)
		}
	}
	before := e.treeMessages(alice, conv, false)
	if contentsOf(before) != "q1|Answer 1.|q2|Answer 2." {
		t.Fatalf("before the edit %q", contentsOf(before))
	}

	// The client's history changes q2 and drops what followed it.
	e.aguiRun(alice, input(thread, "r3", userMsg("c-u1", "q1"), assistant("c-a1", "Answer 1."), userMsg("c-u2", "q2, edited")))
	active := e.treeMessages(alice, conv, false)
	if contentsOf(active) != "q1|Answer 1.|q2, edited|Answer 3." || active[2]["parentId"] != before[1]["id"] {
		t.Fatalf("after the edit %v", active)
	}
	if got := stringsOf(active[2]["siblingIds"]); !slices.Equal(got, []string{before[2]["id"].(string), active[2]["id"].(string)}) {
		t.Fatalf("the edited message's versions %v", got)
	}
	// A history that agrees with the new branch is a new turn on it.
	e.aguiRun(alice, input(thread, "r4", userMsg("c-u1", "q1"), assistant("c-a1", "Answer 1."), userMsg("c-u2", "q2, edited"),
		assistant("c-a3", "Answer 3."), userMsg("c-u3", "q3")))
	if got := contentsOf(e.treeMessages(alice, conv, false)); got != "q1|Answer 1.|q2, edited|Answer 3.|q3|Answer 4." {
		t.Fatalf("the turn after the edit %q", got)
	}
	// A history that ends at the last question (its answer dropped) asks
	// for that answer again: a sibling answer, no repeated question.
	e.aguiRun(alice, input(thread, "r5", userMsg("c-u1", "q1"), assistant("c-a1", "Answer 1."), userMsg("c-u2", "q2, edited"),
		assistant("c-a3", "Answer 3."), userMsg("c-u3", "q3")))
	active = e.treeMessages(alice, conv, false)
	if got := contentsOf(active); got != "q1|Answer 1.|q2, edited|Answer 3.|q3|Answer 5." {
		t.Fatalf("after asking again %q", got)
	}
	if got := stringsOf(active[5]["siblingIds"]); len(got) != 2 || got[1] != active[5]["id"] {
		t.Fatalf("the new answer's versions %v", got)
	}
	if got := contentsOf(e.treeMessages(alice, conv, true)); got != "q1|Answer 1.|q2|Answer 2.|q2, edited|Answer 3.|q3|Answer 4.|Answer 5." {
		t.Fatalf("every message %q", got)
	}
	want := []string{"q1", "q1|Answer 1.|q2", "q1|Answer 1.|q2, edited", "q1|Answer 1.|q2, edited|Answer 3.|q3", "q1|Answer 1.|q2, edited|Answer 3.|q3"}
	if got := upstreamContexts(up); !slices.Equal(got, want) {
		t.Fatalf("model contexts\n%q\nwant\n%q", got, want)
	}
}
