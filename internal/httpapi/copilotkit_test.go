package httpapi_test

import (
	"encoding/json"
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/agui/aguitest"
	"github.com/agentchat/agentchat/internal/tool/builtin"
)

// onInterrupt is the on_interrupt CUSTOM event of an interrupted run's
// stream (CopilotKit's useInterrupt listens for it), checked against the
// RUN_FINISHED outcome's interrupt.
func onInterrupt(t *testing.T, evs []aguitest.Event, in map[string]any) map[string]any {
	t.Helper()
	var found []aguitest.Event
	for _, ev := range ofType(evs, "CUSTOM") {
		if ev.Str("name") == "on_interrupt" {
			found = append(found, ev)
		}
	}
	if len(found) != 1 || evs[len(evs)-2].Str("name") != "on_interrupt" {
		t.Fatalf("want one on_interrupt just before RUN_FINISHED: %v", evTypes(evs))
	}
	v, _ := found[0].Data["value"].(map[string]any)
	args, _ := v["args"].(map[string]any)
	if v["id"] != in["id"] || v["toolCallId"] != in["toolCallId"] || v["toolName"] != "send_webhook" || v["reason"] != "confirmation" ||
		v["message"] != in["message"] || v["expiresAt"] != in["expiresAt"] || args["text"] != "deploy done" {
		t.Fatalf("on_interrupt value %v, interrupt %v", v, in)
	}
	return v
}

// commandInput is CopilotKit's resume: forwardedProps.command.
func commandInput(thread, runID string, resume, interruptEvent any) map[string]any {
	in := input(thread, runID, userMsg(runID+"-u", `Send a webhook saying "deploy done"`))
	cmd := map[string]any{"resume": resume}
	if interruptEvent != nil {
		cmd["interruptEvent"] = interruptEvent
	}
	in["forwardedProps"] = map[string]any{"command": cmd}
	return in
}

func TestAGUICopilotKitInterrupt(t *testing.T) {
	t.Parallel()
	asText := func(v map[string]any) any { b, _ := json.Marshal(v); return string(b) }
	for _, tt := range []struct {
		name     string
		resume   any
		event    func(v map[string]any) any // the interruptEvent sent back
		approved bool
	}{
		{"object", map[string]any{"approved": true}, func(v map[string]any) any { return v }, true},
		{"event as text", map[string]any{"approved": false, "reason": "not now"}, asText, false},
		{"approve text, no event", "approve", func(map[string]any) any { return nil }, true},
		{"reject text", "reject", func(v map[string]any) any { return v }, false},
		{"boolean", true, func(v map[string]any) any { return v }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHook(t)
			e := setup(t, options{builtin: builtin.Config{Webhook: builtin.WebhookConfig{URL: h.srv.URL}}})
			thread := "t-ck"
			first, in := interrupted(t, e, thread, "run-1")
			v := onInterrupt(t, first, in)
			// CopilotKit resumes under the interrupted run's id.
			second := e.aguiRun(alice, commandInput(thread, "run-1", tt.resume, tt.event(v)))
			if s := second[0]; s.Type() != "RUN_STARTED" || s.Str("runId") != "run-1" {
				t.Fatalf("continuation starts %v", s.Data)
			}
			res := ofType(second, "TOOL_CALL_RESULT")
			if len(res) != 1 || res[0].Str("toolCallId") != in["toolCallId"] {
				t.Fatalf("results %v", evTypes(second))
			}
			if end := second[len(second)-1]; end.Type() != "RUN_FINISHED" || end.Data["outcome"] != nil {
				t.Fatalf("end %v", end.Data)
			}
			if tt.approved != (h.calls() == 1) || h.calls() > 1 {
				t.Fatalf("webhook called %d times", h.calls())
			}
			aguitest.Verify(t, append(first, second...))

			// Decided: the opposite answer is refused, the same one replays
			// the continuation, and the tool ran at most once.
			opposite := map[string]any{"approved": !tt.approved}
			e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: commandInput(thread, "run-3", opposite, v)}, 409, "interrupt_already_resolved")
			// Nothing is open now: a resume naming no confirmation is refused.
			e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: commandInput(thread, "run-4", "approve", nil)}, 404, "interrupt_not_found")
			if h.calls() > 1 {
				t.Fatalf("webhook called %d times", h.calls())
			}
		})
	}
}

func TestAGUICopilotKitBadResume(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	for _, resume := range []any{"maybe", 3, []any{"approve"}, map[string]any{"approved": "yes"}} {
		e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: commandInput("t-bad-ck", "r", resume, map[string]any{"id": "x"})}, 422, "invalid_resume")
	}
	// A thread nobody started, and an interrupt id that is no confirmation.
	e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: commandInput("t-none", "r", "approve", nil)}, 404, "thread_not_found")
	e.aguiRun(alice, input("t-plain", "r1", userMsg("u1", "hello")))
	e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: commandInput("t-plain", "r2", "approve", map[string]any{"id": "nope"})}, 404, "interrupt_not_found")
}
