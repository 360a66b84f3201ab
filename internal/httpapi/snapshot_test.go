package httpapi_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/agui/aguitest"
)

// A thread stream asked for a snapshot starts with the thread's messages.
func TestAGUIMessagesSnapshotOnRequest(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	frames := e.chat(alice, map[string]any{"input": "What time is it in Tokyo?"})
	thread := frames[0].Data["conversationId"].(string)
	rd, resp := e.aguiStream(req{method: "GET", path: "/api/v1/agent/runs/" + thread + "/events?snapshot=messages", token: alice})
	defer resp.Body.Close()
	evs := readAGUI(t, rd, false, func(aguitest.Event) bool { return true })
	snap := evs[0]
	if snap.Type() != "MESSAGES_SNAPSHOT" {
		t.Fatalf("first event %s", snap.Type())
	}
	msgs := snap.Data["messages"].([]any)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if len(roles) != 4 || roles[0] != "user" || roles[1] != "assistant" || roles[2] != "tool" || roles[3] != "assistant" {
		t.Fatalf("roles %v", roles)
	}
	call := msgs[1].(map[string]any)["toolCalls"].([]any)[0].(map[string]any)
	if call["id"] != msgs[2].(map[string]any)["toolCallId"] || call["function"].(map[string]any)["name"] != "get_current_time" {
		t.Fatalf("tool call %v does not match its result %v", call, msgs[2])
	}
	if snap.ID != last(frames).ID {
		t.Fatalf("snapshot id %s, the thread's last event is %s", snap.ID, last(frames).ID)
	}
	// What comes next is the next run, not a replay of what the snapshot holds.
	e.chat(alice, map[string]any{"conversationId": thread, "input": "thanks"})
	next := readAGUI(t, rd, false, runEnds(1))
	if next[0].Type() != "RUN_STARTED" {
		t.Fatalf("after the snapshot came %s", next[0].Type())
	}
	e.apiError(req{method: "GET", path: "/api/v1/agent/runs/" + thread + "/events?snapshot=messages", token: eve}, 404, "thread_not_found")
}
