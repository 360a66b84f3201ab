package httpapi_test

import (
	"testing"
)

// Feedback: the owner rates an answer and sees it on the message, changes
// and withdraws it; another user's message is a 404; admins review the
// tenant's ratings; the ratings go with their conversation.
func TestFeedback(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hello"}})
	readNative(t, rd, "")
	conv := resp.Header.Get("X-Conversation-ID")
	resp.Body.Close()
	msgs := e.treeMessages(alice, conv, false)
	answer := msgs[len(msgs)-1]["id"].(string)
	path := "/v1/messages/" + answer + "/feedback"

	f := e.call(req{method: "PUT", path: path, token: alice, body: map[string]any{"rating": "down", "comment": "too short", "tags": []string{"length"}}}, 200)
	if f["rating"] != "down" || f["comment"] != "too short" || f["conversationId"] != conv || f["runId"] == nil {
		t.Fatalf("feedback %v", f)
	}
	shown := e.treeMessages(alice, conv, false)
	if fb, _ := shown[len(shown)-1]["feedback"].(map[string]any); fb == nil || fb["rating"] != "down" {
		t.Fatalf("message without its feedback %v", shown[len(shown)-1])
	}
	e.apiError(req{method: "PUT", path: path, token: bob, body: map[string]any{"rating": "up"}}, 404, "message_not_found")
	e.apiError(req{method: "PUT", path: path, token: eve, body: map[string]any{"rating": "up"}}, 404, "message_not_found")
	e.apiError(req{method: "PUT", path: path, token: alice, body: map[string]any{"rating": "meh"}}, 422, "invalid_input")

	// Admins review; members may not.
	e.apiError(req{method: "GET", path: "/v1/feedback", token: alice}, 403, "admin_required")
	list := e.call(req{method: "GET", path: "/v1/feedback?rating=down", token: root}, 200)["feedback"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["messageId"] != answer {
		t.Fatalf("review %v", list)
	}
	if list := e.call(req{method: "GET", path: "/v1/feedback?rating=up", token: root}, 200)["feedback"].([]any); len(list) != 0 {
		t.Fatalf("up ratings %v", list)
	}
	if list := e.call(req{method: "GET", path: "/v1/feedback", token: mallory}, 200)["feedback"].([]any); len(list) != 0 {
		t.Fatalf("another tenant's admin sees %v", list)
	}

	// Changed, then withdrawn.
	if f := e.call(req{method: "PUT", path: path, token: alice, body: map[string]any{"rating": "up"}}, 200); f["rating"] != "up" {
		t.Fatalf("changed %v", f)
	}
	e.call(req{method: "DELETE", path: path, token: alice}, 204)
	e.apiError(req{method: "DELETE", path: path, token: alice}, 404, "feedback_not_found")
	shown = e.treeMessages(alice, conv, false)
	if _, ok := shown[len(shown)-1]["feedback"]; ok {
		t.Fatalf("withdrawn feedback still shown %v", shown[len(shown)-1])
	}
	// Deleted with the conversation.
	e.call(req{method: "PUT", path: path, token: alice, body: map[string]any{"rating": "down"}}, 200)
	e.call(req{method: "DELETE", path: "/v1/conversations/" + conv, token: alice}, 204)
	if list := e.call(req{method: "GET", path: "/v1/feedback", token: root}, 200)["feedback"].([]any); len(list) != 0 {
		t.Fatalf("feedback outlived its conversation %v", list)
	}
}
