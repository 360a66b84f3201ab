package httpapi_test

import (
	"testing"
)

// A retried start with the same Idempotency-Key attaches to the first run
// (the same stream, no second user message); another body with the key is
// 422; keys are per principal.
func TestIdempotentStart(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	key := map[string]string{"Idempotency-Key": "start-1"}
	body := map[string]any{"input": "what time is it in Tokyo?"}
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: body, header: key})
	first := readNative(t, rd, "")
	resp.Body.Close()
	runID, conv := resp.Header.Get("X-Run-ID"), resp.Header.Get("X-Conversation-ID")
	rd, again := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: body, header: key})
	second := readNative(t, rd, "")
	again.Body.Close()
	if again.Header.Get("X-Run-ID") != runID || len(second) != len(first) || last(second).Data["status"] != "succeeded" {
		t.Fatalf("repeat attached to %s (want %s): %v", again.Header.Get("X-Run-ID"), runID, names(second))
	}
	for i := range first {
		if first[i].ID != second[i].ID || first[i].Event != second[i].Event {
			t.Fatalf("frame %d: %s %s, first time %s %s", i, second[i].ID, second[i].Event, first[i].ID, first[i].Event)
		}
	}
	msgs := e.treeMessages(alice, conv, true)
	users := 0
	for _, m := range msgs {
		if m["role"] == "user" {
			users++
		}
	}
	if users != 1 {
		t.Fatalf("%d user messages after a retried start", users)
	}
	// The same key with another body.
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "something else"}, header: key}, 422, "idempotency_key_reused")
	// Another principal's key of the same name is its own.
	rd, other := e.stream(req{method: "POST", path: "/v1/agent/chat", token: bob, body: body, header: key})
	readNative(t, rd, "")
	other.Body.Close()
	if other.Header.Get("X-Run-ID") == runID {
		t.Fatal("bob attached to alice's run")
	}
	// AG-UI without a stream: the same 202.
	in := input("t-idem", "run-i1", userMsg("u1", "hello"))
	k2 := map[string]string{"Idempotency-Key": "agui-1"}
	a := e.call(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: in, header: k2}, 202)
	b := e.call(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: in, header: k2}, 202)
	if a["taskId"] != b["taskId"] || a["taskId"] == "" {
		t.Fatalf("AG-UI repeat %v, first %v", b, a)
	}
}
