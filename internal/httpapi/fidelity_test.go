package httpapi_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/tool/builtin"
)

// What a client saw live is what the history gives it afterwards (issue 26:
// a console that redraws a conversation from GET …/messages must draw the
// same run): the reasoning of each model call on the message that call
// wrote, the turn's retrieval on its first assistant message, a failed
// tool's error verbatim, and the arguments a person edited before approving
// as the arguments the tool ran with, exactly once. On both store backends.
func TestHistoryKeepsWhatTheStreamShowed(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, o options) {
		hook := newFeishu(t)
		o.knowledge = true
		o.builtin = builtin.Config{Feishu: builtin.FeishuConfig{WebhookURL: hook.srv.URL}}
		e := setup(t, o)
		e.upload(alice, "returns.md", "# Returns\n\nGoods may be returned within seven days of delivery.")

		live := e.chat(alice, map[string]any{"input": "think about returns within seven days, then what is 6*7 and fetch http://127.0.0.1:1/private"})
		if last(live).Data["status"] != "succeeded" {
			t.Fatalf("run ended %v: %v", last(live).Data, names(live))
		}
		conv := live[0].Data["conversationId"].(string)
		reasoning := map[string]string{} // message id → reasoning streamed
		var retrieval map[string]any
		failures := map[string]string{} // tool call id → error shown live
		for _, f := range live {
			switch {
			case f.Event == "agent.reasoning":
				reasoning[f.Data["messageId"].(string)] += f.Data["delta"].(string)
			case f.Event == "retrieval":
				retrieval = f.Data
			case f.Event == "tool.state" && f.Data["status"] == "failed":
				failures[f.Data["toolCallId"].(string)] = f.Data["error"].(string)
			}
		}
		if len(reasoning) == 0 || retrieval == nil || len(failures) != 1 {
			t.Fatalf("the turn shows no reasoning, retrieval or tool failure: %v", names(live))
		}

		msgs := e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/messages", token: alice}, 200)["messages"].([]any)
		stored := map[string]string{}
		var firstAssistant map[string]any
		for _, raw := range msgs {
			m := raw.(map[string]any)
			meta, _ := m["metadata"].(map[string]any)
			switch m["role"] {
			case "assistant":
				if firstAssistant == nil {
					firstAssistant = meta
				}
				if r, ok := meta["reasoning"].(string); ok {
					stored[m["id"].(string)] = r
				}
			case "tool":
				if want, ok := failures[meta["tool_call_id"].(string)]; ok && meta["error"] != want {
					t.Errorf("stored tool error %q, live %q", meta["error"], want)
				}
			}
		}
		if !reflect.DeepEqual(stored, reasoning) {
			t.Errorf("stored reasoning %q, live %q", stored, reasoning)
		}
		delete(retrieval, "runId") // the frame's envelope, not the retrieval
		if got := firstAssistant["retrieval"]; !reflect.DeepEqual(got, retrieval) {
			t.Errorf("stored retrieval %v, live %v", got, retrieval)
		}

		// A person edits the arguments and approves: the tool runs once, with
		// them, and the history says so.
		asked, cid, rest, closeStream := awaitConfirmation(t, e, alice, "as the model wrote it")
		defer closeStream()
		e.call(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice,
			body: map[string]any{"decision": "approve", "args": map[string]any{"text": "as a person edited it"}}}, 200)
		after := rest()
		if last(after).Data["status"] != "succeeded" {
			t.Fatalf("approved run ended %v", last(after).Data)
		}
		if got := hook.texts(); len(got) != 1 || got[0] != "as a person edited it" {
			t.Fatalf("the webhook got %q, want the edited text once", got)
		}
		conv = asked[0].Data["conversationId"].(string)
		msgs = e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/messages", token: alice}, 200)["messages"].([]any)
		var ran []string
		for _, raw := range msgs {
			m := raw.(map[string]any)
			if m["role"] != "tool" {
				continue
			}
			args, _ := json.Marshal(m["metadata"].(map[string]any)["tool_call_args"])
			ran = append(ran, string(args))
		}
		if len(ran) != 1 || !strings.Contains(ran[0], "as a person edited it") {
			t.Fatalf("stored tool results %q, want one with the edited arguments", ran)
		}
	})
}
