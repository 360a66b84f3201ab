package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/engine/chain"
	"github.com/agentchat/agentchat/internal/llm/fakeupstream"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/tool"
)

// upstreamKey is the fake provider's key, which must never be shown.
const upstreamKey = "sk-upstream-secret-4242"

// agentsEnv is a stack with agents over two models: "offline" (the
// scripted model) and "gpt" (an OpenAI-compatible fake upstream, whose
// requests a test reads), and the chain engine beside the local one.
type agentsEnv struct {
	*env
	up *llmtest.Server
}

func agentsSetup(t *testing.T, o options) agentsEnv {
	t.Helper()
	up := llmtest.NewOpenAIServer(t, llmtest.Options{Reply: upstreamReply})
	path := filepath.Join(t.TempDir(), "models.json")
	models := `{"models": {
		"offline": {"provider": "scripted"},
		"gpt": {"provider": "openai", "model": "gpt-test", "baseURL": "` + up.URL + `/v1", "apiKeyEnv": "TEST_UPSTREAM_KEY", "contextWindow": 128000}}}`
	if err := os.WriteFile(path, []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	o.agents, o.modelsFile = true, path
	o.getenv = func(k string) string {
		if k == "TEST_UPSTREAM_KEY" {
			return upstreamKey
		}
		return ""
	}
	o.engines = func(reg *tool.Registry, loc engine.Engine) map[string]engine.Engine {
		return map[string]engine.Engine{"chain": chain.New(chain.Config{Model: o.model, Tools: reg, Executor: loc})}
	}
	return agentsEnv{env: setup(t, o), up: up}
}

// upstreamReply answers as a model would: a chain's planner and checker
// get their JSON, a request whose last message asks to "send" gets a
// send_webhook call, and anything else a short text.
func upstreamReply(r fakeupstream.Request) fakeupstream.Reply {
	system := systemOf(r)
	switch {
	case strings.Contains(system, "planner of a chain"):
		return fakeupstream.TextReply(`{"execution_chain":["executor","check"],"mcp_config":["builtin"],"instructions":"Answer the user."}`)
	case strings.Contains(system, "checker of a chain"):
		return fakeupstream.TextReply(`{"judge":true,"score":90,"reasoning":"fine","tool_assessments":[]}`)
	}
	msgs, _ := r.Body["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if last["role"] == "user" && strings.Contains(fmt.Sprint(last["content"]), "send") {
		return fakeupstream.Reply{ToolCalls: []fakeupstream.ToolCall{{ID: "call_send", Name: "send_webhook", Args: []string{`{"text":"hi"}`}}}}
	}
	return fakeupstream.TextReply("Answer from gpt.")
}

// systemOf is the system prompt of a request to the fake upstream.
func systemOf(r fakeupstream.Request) string {
	msgs, _ := r.Body["messages"].([]any)
	if len(msgs) == 0 {
		return ""
	}
	first, _ := msgs[0].(map[string]any)
	if first["role"] != "system" {
		return ""
	}
	return fmt.Sprint(first["content"])
}

// toolsOf names the tools a request offered the model.
func toolsOf(r fakeupstream.Request) []string {
	var out []string
	tools, _ := r.Body["tools"].([]any)
	for _, t := range tools {
		f, _ := t.(map[string]any)["function"].(map[string]any)
		out = append(out, fmt.Sprint(f["name"]))
	}
	slices.Sort(out)
	return out
}

// lastRequest is the newest request the upstream received.
func (e agentsEnv) lastRequest() fakeupstream.Request {
	e.t.Helper()
	reqs := e.up.Requests()
	if len(reqs) == 0 {
		e.t.Fatal("the upstream received no request")
	}
	return reqs[len(reqs)-1]
}

func (e agentsEnv) createAgent(token string, body map[string]any) map[string]any {
	e.t.Helper()
	return e.call(req{method: "POST", path: "/v1/agents", token: token, body: body}, 201)
}

// runAgent reads a run's agent from its resource, its timeline and its
// native agent.start: the three must agree.
func (e agentsEnv) runAgent(token, runID string) (string, float64) {
	e.t.Helper()
	r := e.call(req{method: "GET", path: "/v1/agent/runs/" + runID, token: token}, 200)
	tl := e.call(req{method: "GET", path: "/v1/agent/runs/" + runID + "/timeline", token: token}, 200)
	var start map[string]any
	for _, ev := range tl["events"].([]any) {
		if ev.(map[string]any)["event"] == "agent.start" {
			start = ev.(map[string]any)["payload"].(map[string]any)
			break
		}
	}
	id, _ := r["agentId"].(string)
	v, _ := r["agentVersion"].(float64)
	if tl["agentId"] != r["agentId"] || tl["agentVersion"] != r["agentVersion"] || start == nil ||
		start["agentId"] != r["agentId"] || start["agentVersion"] != r["agentVersion"] {
		e.t.Fatalf("run %s names its agent differently: resource %v/%v, timeline %v/%v, agent.start %v", runID,
			r["agentId"], r["agentVersion"], tl["agentId"], tl["agentVersion"], start)
	}
	return id, v
}

// The "done when", through HTTP on both backends: an admin creates
// an agent whose instructions and tools reach the model, a member cannot
// change it, an edit is in effect on the next run, a rollback restores the
// earlier behaviour at once, every run names its agent version, and
// another tenant sees none of it.
func TestAgentsLifecycle(t *testing.T) {
	backends(t, func(t *testing.T, o options) {
		e := agentsSetup(t, o)
		support := e.createAgent(root, map[string]any{"name": "Support", "description": "Answers customers.", "model": "gpt",
			"instructions": "You are Acme's support agent, v1.", "tools": []string{"calculator", "get_current_time"}, "starters": []string{"Where is my order?"}})
		id := support["id"].(string)
		if support["version"] != 1.0 || support["latestVersion"] != 1.0 || support["createdBy"] != "root" || support["model"] != "gpt" {
			t.Fatalf("created %v", support)
		}

		// A member uses it and cannot change it.
		e.apiError(req{method: "POST", path: "/v1/agents", token: alice, body: map[string]any{"name": "Mine"}}, 403, "admin_required")
		e.apiError(req{method: "PATCH", path: "/v1/agents/" + id, token: alice, body: map[string]any{"instructions": "x"}}, 403, "admin_required")
		e.apiError(req{method: "POST", path: "/v1/agents/" + id + "/publish", token: alice, body: map[string]any{"version": 1}}, 403, "admin_required")
		e.apiError(req{method: "DELETE", path: "/v1/agents/" + id, token: alice}, 403, "admin_required")
		e.apiError(req{method: "PATCH", path: "/v1/tenant", token: alice, body: map[string]any{"defaultAgentId": id}}, 403, "admin_required")
		if got := e.call(req{method: "GET", path: "/v1/agents/" + id, token: alice}, 200); got["name"] != "Support" || got["version"] != 1.0 {
			t.Fatalf("alice reads %v", got)
		}

		// Its instructions and tool list reach the model.
		first := e.chat(alice, map[string]any{"input": "hello", "agentId": id})
		if end := last(first); end.Event != "agent.end" || end.Data["status"] != "succeeded" {
			t.Fatalf("run ended %v", end)
		}
		start, _ := find(first, "agent.start")
		if start.Data["agentId"] != id || start.Data["agentVersion"] != 1.0 {
			t.Fatalf("agent.start %v", start.Data)
		}
		sent := e.lastRequest()
		if sys := systemOf(sent); !strings.Contains(sys, "<component name=\"instructions\">\nYou are Acme's support agent, v1.\n</component>") {
			t.Fatalf("system prompt %q", sys)
		}
		if got := toolsOf(sent); !slices.Equal(got, []string{"calculator", "get_current_time"}) {
			t.Fatalf("tools offered %v", got)
		}
		if sent.Body["model"] != "gpt-test" || sent.APIKey() != upstreamKey {
			t.Fatalf("model %v", sent.Body["model"])
		}
		conv := start.Data["conversationId"].(string)
		if got, v := e.runAgent(alice, start.Data["runId"].(string)); got != id || v != 1 {
			t.Fatalf("run names %s v%v", got, v)
		}

		// An edit is in effect on the next run, in the same conversation.
		edited := e.call(req{method: "PATCH", path: "/v1/agents/" + id, token: root, body: map[string]any{"instructions": "You are Acme's support agent, v2.", "tools": []string{"calculator"}}}, 200)
		if edited["version"] != 2.0 || edited["instructions"] != "You are Acme's support agent, v2." {
			t.Fatalf("edited %v", edited)
		}
		second := e.chat(alice, map[string]any{"input": "again", "conversationId": conv})
		if sys := systemOf(e.lastRequest()); !strings.Contains(sys, "v2.") || strings.Contains(sys, "v1.") {
			t.Fatalf("after the edit the model was told %q", sys)
		}
		if got := toolsOf(e.lastRequest()); !slices.Equal(got, []string{"calculator"}) {
			t.Fatalf("after the edit tools offered %v", got)
		}
		s2, _ := find(second, "agent.start")
		if _, v := e.runAgent(alice, s2.Data["runId"].(string)); v != 2 {
			t.Fatalf("the run after the edit is version %v", v)
		}

		// A rollback restores the earlier behaviour at once.
		back := e.call(req{method: "POST", path: "/v1/agents/" + id + "/publish", token: root, body: map[string]any{"version": 1}}, 200)
		if back["version"] != 1.0 || back["latestVersion"] != 2.0 || back["instructions"] != "You are Acme's support agent, v1." {
			t.Fatalf("rolled back %v", back)
		}
		third := e.chat(alice, map[string]any{"input": "and again", "conversationId": conv})
		if sys := systemOf(e.lastRequest()); !strings.Contains(sys, "v1.") {
			t.Fatalf("after the rollback the model was told %q", sys)
		}
		if got := toolsOf(e.lastRequest()); !slices.Equal(got, []string{"calculator", "get_current_time"}) {
			t.Fatalf("after the rollback tools offered %v", got)
		}
		s3, _ := find(third, "agent.start")
		if _, v := e.runAgent(alice, s3.Data["runId"].(string)); v != 1 {
			t.Fatalf("the run after the rollback is version %v", v)
		}

		// The versions: who, when, what changed, and each whole definition.
		vs := e.call(req{method: "GET", path: "/v1/agents/" + id + "/versions", token: alice}, 200)
		list := vs["versions"].([]any)
		if len(list) != 2 {
			t.Fatalf("versions %v", vs)
		}
		v2, v1 := list[0].(map[string]any), list[1].(map[string]any)
		if v2["version"] != 2.0 || v2["published"] != false || v2["createdBy"] != "root" || fmt.Sprint(v2["changes"]) != "[instructions tools]" ||
			v2["definition"].(map[string]any)["instructions"] != "You are Acme's support agent, v2." {
			t.Fatalf("version 2 %v", v2)
		}
		if v1["version"] != 1.0 || v1["published"] != true || fmt.Sprint(v1["changes"]) != "[]" {
			t.Fatalf("version 1 %v", v1)
		}
		one := e.call(req{method: "GET", path: "/v1/agents/" + id + "/versions/1", token: alice}, 200)
		if one["definition"].(map[string]any)["name"] != "Support" {
			t.Fatalf("version 1 read %v", one)
		}
		e.apiError(req{method: "GET", path: "/v1/agents/" + id + "/versions/3", token: alice}, 404, "agent_version_not_found")

		// The conversation is the agent's, and lists by it.
		convs := e.call(req{method: "GET", path: "/v1/conversations?agentId=" + id, token: alice}, 200)["conversations"].([]any)
		if len(convs) != 1 || convs[0].(map[string]any)["id"] != conv || convs[0].(map[string]any)["agentId"] != id {
			t.Fatalf("conversations of the agent %v", convs)
		}

		// Another tenant sees none of it.
		e.apiError(req{method: "GET", path: "/v1/agents/" + id, token: eve}, 404, "agent_not_found")
		e.apiError(req{method: "GET", path: "/v1/agents/" + id, token: mallory}, 404, "agent_not_found")
		e.apiError(req{method: "GET", path: "/v1/agents/" + id + "/versions", token: mallory}, 404, "agent_not_found")
		e.apiError(req{method: "GET", path: "/v1/agents/" + id + "/versions/1", token: mallory}, 404, "agent_not_found")
		e.apiError(req{method: "PATCH", path: "/v1/agents/" + id, token: mallory, body: map[string]any{"name": "mine"}}, 404, "agent_not_found")
		e.apiError(req{method: "POST", path: "/v1/agents/" + id + "/publish", token: mallory, body: map[string]any{"version": 1}}, 404, "agent_not_found")
		e.apiError(req{method: "DELETE", path: "/v1/agents/" + id, token: mallory}, 404, "agent_not_found")
		e.apiError(req{method: "POST", path: "/v1/agent/chat", token: eve, body: map[string]any{"input": "hi", "agentId": id}}, 404, "agent_not_found")
		e.apiError(req{method: "PATCH", path: "/v1/tenant", token: mallory, body: map[string]any{"defaultAgentId": id}}, 422, "invalid_field")
		if theirs := e.call(req{method: "GET", path: "/v1/agents?archived=true", token: mallory}, 200)["agents"].([]any); len(theirs) != 0 {
			t.Fatalf("another tenant lists %v", theirs)
		}
		if ours := e.call(req{method: "GET", path: "/v1/agents", token: bob}, 200)["agents"].([]any); len(ours) != 1 {
			t.Fatalf("the tenant lists %v", ours)
		}

		// Archived: its conversations stay readable, new runs are refused.
		arch := e.call(req{method: "DELETE", path: "/v1/agents/" + id, token: root}, 200)
		if arch["archivedAt"] == nil {
			t.Fatalf("archived %v", arch)
		}
		e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hi", "conversationId": conv}}, 409, "agent_archived")
		e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hi", "agentId": id}}, 409, "agent_archived")
		e.apiError(req{method: "PATCH", path: "/v1/agents/" + id, token: root, body: map[string]any{"name": "back"}}, 409, "agent_archived")
		if msgs := e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/messages", token: alice}, 200)["messages"].([]any); len(msgs) != 6 {
			t.Fatalf("the archived agent's conversation holds %d messages", len(msgs))
		}
		if listed := e.call(req{method: "GET", path: "/v1/agents", token: alice}, 200)["agents"].([]any); len(listed) != 0 {
			t.Fatalf("an archived agent is listed: %v", listed)
		}
		if listed := e.call(req{method: "GET", path: "/v1/agents?archived=true", token: alice}, 200)["agents"].([]any); len(listed) != 1 {
			t.Fatalf("archived=true lists %v", listed)
		}
	})
}

// Each of the four surfaces runs the agent it names: native chat, AG-UI
// (forwardedProps.agentId), the AI SDK (a body field, as useChat's body
// option sends it) and the chain stream (agent_id); the conversation's
// agent answers every later run whatever surface continues it.
func TestEverySurfacePicksTheAgent(t *testing.T) {
	backends(t, func(t *testing.T, o options) {
		e := agentsSetup(t, o)
		gpt := e.createAgent(root, map[string]any{"name": "Support", "model": "gpt", "instructions": "Support instructions."})["id"].(string)
		offline := e.createAgent(root, map[string]any{"name": "Sales", "model": "offline", "instructions": "Sales instructions: always mention the spring offer."})["id"].(string)

		// AG-UI: the thread is bound to the agent of its first run.
		in := input("t-agent", "run-1", userMsg("u1", "hello"))
		in["forwardedProps"] = map[string]any{"agentId": gpt}
		e.aguiRun(alice, in)
		if sys := systemOf(e.lastRequest()); !strings.Contains(sys, "Support instructions.") {
			t.Fatalf("AG-UI run's system prompt %q", sys)
		}
		runs := e.call(req{method: "GET", path: "/v1/conversations?agentId=" + gpt, token: alice}, 200)["conversations"].([]any)
		if len(runs) != 1 {
			t.Fatalf("AG-UI thread not bound: %v", runs)
		}
		aguiConv := runs[0].(map[string]any)["id"].(string)
		if id, v := e.latestRunAgent(alice, aguiConv); id != gpt || v != 1 {
			t.Fatalf("AG-UI run names %s v%v", id, v)
		}
		// Naming another agent on the thread is refused; naming none continues with its own.
		in = input("t-agent", "run-2", userMsg("u1", "hello"), userMsg("u2", "more"))
		in["forwardedProps"] = map[string]any{"agentId": offline}
		e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: in, header: map[string]string{"Accept": "text/event-stream"}}, 409, "agent_mismatch")

		// The AI SDK: the body's agentId, as useChat sends it with every request.
		body := transportBody("chat-sales", "submit-message", "", userMessage("m1", "show me your system prompt"))
		body["agentId"] = offline
		ui := e.uiChat(alice, body)
		if !strings.Contains(ui.text(), "always mention the spring offer") {
			t.Fatalf("the AI SDK chat was answered without the Sales instructions: %q", ui.text())
		}
		if id, v := e.runAgent(alice, ui.first("start")["messageId"].(string)); id != offline || v != 1 {
			t.Fatalf("AI SDK run names %s v%v", id, v)
		}

		// The chain: planner, executor and check all use the agent's model.
		before := len(e.up.Requests())
		rd, resp := e.chain("/v1/chain/stream?"+url.Values{"user_input": {"plan my week"}, "agent_id": {gpt}}.Encode(), nil)
		frames := rd.readAll(nil)
		if f := frames[len(frames)-1]; f.Event != "final" {
			t.Fatalf("chain ended with %s", f.Event)
		}
		var roles []string
		for _, r := range e.up.Requests()[before:] {
			switch sys := systemOf(r); {
			case strings.Contains(sys, "planner of a chain"):
				roles = append(roles, "planner")
			case strings.Contains(sys, "checker of a chain"):
				roles = append(roles, "check")
			default:
				roles = append(roles, "executor")
			}
			if !strings.Contains(systemOf(r), "Support instructions.") {
				t.Errorf("a chain step's prompt lacks the agent's instructions: %q", systemOf(r))
			}
		}
		if !slices.Equal(roles, []string{"planner", "executor", "check"}) {
			t.Fatalf("chain steps on the agent's model: %v", roles)
		}
		if id, _ := e.runAgent(alice, resp.Header.Get("X-Run-ID")); id != gpt {
			t.Fatalf("chain run names %s", id)
		}

		// Native: a conversation created for the agent; a later native run
		// on the AI SDK's chat goes on with that chat's agent.
		c := e.call(req{method: "POST", path: "/v1/conversations", token: alice, body: map[string]any{"title": "for sales", "agentId": offline}}, 200)
		if c["agentId"] != offline {
			t.Fatalf("conversation %v", c)
		}
		fs := e.chat(alice, map[string]any{"input": "show me your system prompt", "conversationId": c["id"]})
		if msg, _ := find(fs, "agent.message"); !strings.Contains(fmt.Sprint(msg.Data["content"]), "spring offer") {
			t.Fatalf("native run in the Sales conversation: %v", msg.Data)
		}
		e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "x", "conversationId": c["id"], "agentId": gpt}}, 409, "agent_mismatch")
	})
}

// latestRunAgent is the agent of the newest run of a conversation.
func (e agentsEnv) latestRunAgent(token, conv string) (string, float64) {
	e.t.Helper()
	msgs := e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/messages", token: token}, 200)["messages"].([]any)
	runID := msgs[len(msgs)-1].(map[string]any)["runId"].(string)
	return e.runAgent(token, runID)
}

// A draft is tried by pinning its version, by an admin; an unpinned run
// keeps the published version; a paused run continues on the version it
// started with, whatever was published meanwhile.
func TestAgentDraftsAndPausedRuns(t *testing.T) {
	t.Parallel()
	e := agentsSetup(t, options{})
	id := e.createAgent(root, map[string]any{"name": "Ops", "model": "gpt", "instructions": "Ops v1.", "tools": []string{"send_webhook"}})["id"].(string)
	draft := e.call(req{method: "PATCH", path: "/v1/agents/" + id + "?draft=true", token: root, body: map[string]any{"instructions": "Ops draft."}}, 200)
	if draft["version"] != 1.0 || draft["latestVersion"] != 2.0 || draft["instructions"] != "Ops v1." {
		t.Fatalf("after the draft %v", draft)
	}
	e.chat(alice, map[string]any{"input": "hello", "agentId": id})
	if sys := systemOf(e.lastRequest()); !strings.Contains(sys, "Ops v1.") {
		t.Fatalf("an unpinned run used %q", sys)
	}
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hi", "agentId": id, "agentVersion": 2}}, 403, "admin_required")
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: root, body: map[string]any{"input": "hi", "agentId": id, "agentVersion": 7}}, 404, "agent_version_not_found")
	fs := e.chat(root, map[string]any{"input": "hello", "agentId": id, "agentVersion": 2})
	if sys := systemOf(e.lastRequest()); !strings.Contains(sys, "Ops draft.") {
		t.Fatalf("the pinned draft run used %q", sys)
	}
	if s, _ := find(fs, "agent.start"); s.Data["agentVersion"] != 2.0 {
		t.Fatalf("pinned run %v", s.Data)
	}

	// A run that waits for a person, then a publication, then the decision.
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "send the report", "agentId": id}})
	defer resp.Body.Close()
	waiting := readNative(t, rd, "tool.awaiting_input")
	awaiting := last(waiting)
	e.call(req{method: "POST", path: "/v1/agents/" + id + "/publish", token: root, body: map[string]any{"version": 2}}, 200)
	e.call(req{method: "POST", path: "/v1/agent/confirmations/" + awaiting.Data["confirmationId"].(string), token: alice,
		body: map[string]any{"decision": "approve"}}, 200)
	rest := readNative(t, rd, "agent.end")
	if end := last(rest); end.Data["status"] != "succeeded" {
		t.Fatalf("continuation ended %v", end.Data)
	}
	if sys := systemOf(e.lastRequest()); !strings.Contains(sys, "Ops v1.") {
		t.Fatalf("the continuation used %q, not the version its run started with", sys)
	}
	start, _ := find(waiting, "agent.start")
	if _, v := e.runAgent(alice, start.Data["runId"].(string)); v != 1 {
		t.Fatalf("the continued run names version %v", v)
	}
	// The next run follows the newly published version.
	e.chat(alice, map[string]any{"input": "hello", "agentId": id})
	if sys := systemOf(e.lastRequest()); !strings.Contains(sys, "Ops draft.") {
		t.Fatalf("after publishing the draft an unpinned run used %q", sys)
	}
}

// The tenant's default agent answers a conversation that names none, from
// its creation on; without one the built-in default answers, as today.
func TestTenantDefaultAgent(t *testing.T) {
	t.Parallel()
	e := agentsSetup(t, options{})
	fs := e.chat(alice, map[string]any{"input": "hello"})
	s, _ := find(fs, "agent.start")
	if s.Data["agentId"] != "default" || s.Data["agentVersion"] != 0.0 {
		t.Fatalf("without a default agent: %v", s.Data)
	}
	builtIn := e.call(req{method: "GET", path: "/v1/agents/default", token: alice}, 200)
	if builtIn["builtIn"] != true || builtIn["model"] != "default" {
		t.Fatalf("the built-in agent %v", builtIn)
	}
	e.apiError(req{method: "PATCH", path: "/v1/agents/default", token: root, body: map[string]any{"name": "x"}}, 409, "agent_built_in")

	sales := e.createAgent(root, map[string]any{"name": "Sales", "model": "offline", "instructions": "Say the spring offer."})["id"].(string)
	tn := e.call(req{method: "PATCH", path: "/v1/tenant", token: root, body: map[string]any{"defaultAgentId": sales}}, 200)
	if tn["defaultAgentId"] != sales || tn["updatedBy"] != "root" {
		t.Fatalf("tenant %v", tn)
	}
	if got := e.call(req{method: "GET", path: "/v1/tenant", token: alice}, 200); got["defaultAgentId"] != sales {
		t.Fatalf("alice reads %v", got)
	}
	if got := e.call(req{method: "GET", path: "/v1/agents", token: alice}, 200); got["defaultAgentId"] != sales {
		t.Fatalf("list %v", got)
	}
	fs = e.chat(alice, map[string]any{"input": "show me your system prompt"})
	s, _ = find(fs, "agent.start")
	if s.Data["agentId"] != sales {
		t.Fatalf("with a default agent: %v", s.Data)
	}
	conv := s.Data["conversationId"].(string)
	// Changing the default later leaves the conversation with its agent.
	e.call(req{method: "PATCH", path: "/v1/tenant", token: root, body: map[string]any{"defaultAgentId": nil}}, 200)
	fs = e.chat(alice, map[string]any{"input": "again", "conversationId": conv})
	if s, _ := find(fs, "agent.start"); s.Data["agentId"] != sales {
		t.Fatalf("the conversation changed agent with the default: %v", s.Data)
	}
	if s, _ := find(e.chat(alice, map[string]any{"input": "new"}), "agent.start"); s.Data["agentId"] != "default" {
		t.Fatalf("a new conversation after the default was cleared: %v", s.Data)
	}
	e.apiError(req{method: "PATCH", path: "/v1/tenant", token: root, body: map[string]any{"defaultAgentId": "no-such-agent"}}, 422, "invalid_field")
}

// Validation names the field; a model, tool or engine the server does not
// have is refused, as is taking confirmation off a tool that needs it.
func TestAgentValidation(t *testing.T) {
	t.Parallel()
	e := agentsSetup(t, options{})
	tests := []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"name": ""}, "name"},
		{map[string]any{"name": "a", "model": "gpt-9"}, "model"},
		{map[string]any{"name": "a", "tools": []string{"calculator", "format_disk"}}, "tools[1]"},
		{map[string]any{"name": "a", "confirm": map[string]any{"send_webhook": false}}, "confirm.send_webhook"},
		{map[string]any{"name": "a", "instructions": strings.Repeat("x", 4001)}, "instructions"},
		{map[string]any{"name": "a", "engine": "openclaw"}, "engine"},
		{map[string]any{"name": "a", "knowledge": []string{"../etc"}}, "knowledge[0]"},
	}
	for _, tt := range tests {
		errObj := e.apiError(req{method: "POST", path: "/v1/agents", token: root, body: tt.body}, 422, "invalid_field")
		if errObj["field"] != tt.field {
			t.Errorf("%v: error %v, want field %q", tt.body, errObj, tt.field)
		}
	}
	e.apiError(req{method: "POST", path: "/v1/agents", token: root, body: map[string]any{"name": "a", "toools": []string{}}}, 400, "unknown_field")
	id := e.createAgent(root, map[string]any{"name": "a", "confirm": map[string]any{"http_get": true, "calculator": false}})["id"].(string)
	// If-Match: a change built on a stale version is refused.
	e.call(req{method: "PATCH", path: "/v1/agents/" + id, token: root, body: map[string]any{"name": "b"}, header: map[string]string{"If-Match": `"1"`}}, 200)
	e.apiError(req{method: "PATCH", path: "/v1/agents/" + id, token: root, body: map[string]any{"name": "c"}, header: map[string]string{"If-Match": `"1"`}}, 412, "precondition_failed")
	e.apiError(req{method: "POST", path: "/v1/agents/" + id + "/publish", token: root, body: map[string]any{"version": 5}}, 404, "agent_version_not_found")
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hi", "agentId": "no-such-agent"}}, 404, "agent_not_found")
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hi", "agentVersion": 2}}, 422, "invalid_field")
}

// GET /v1/models lists what a tenant may use, never a URL or a key; GET
// /v1/tools says which tools the server makes wait for a person.
func TestModelsList(t *testing.T) {
	t.Parallel()
	e := agentsSetup(t, options{})
	resp := e.send(req{method: "GET", path: "/v1/models", token: alice})
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(string(raw), e.up.URL) || strings.Contains(string(raw), upstreamKey) || strings.Contains(string(raw), "TEST_UPSTREAM_KEY") {
		t.Fatalf("models %d %s", resp.StatusCode, raw)
	}
	var body struct {
		Models []map[string]any `json:"models"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range body.Models {
		got = append(got, fmt.Sprint(m["name"], "=", m["provider"], ":", m["model"]))
	}
	if want := []string{"default=scripted:scripted", "gpt=openai:gpt-test", "offline=scripted:scripted"}; !slices.Equal(got, want) {
		t.Fatalf("models %v, want %v", got, want)
	}
	tools := e.call(req{method: "GET", path: "/v1/tools", token: alice}, 200)["tools"].([]any)
	confirms := map[string]string{}
	for _, tl := range tools {
		confirms[tl.(map[string]any)["name"].(string)] = tl.(map[string]any)["confirm"].(string)
	}
	if confirms["send_webhook"] != "always" || confirms["calculator"] != "never" {
		t.Fatalf("tools %v", confirms)
	}
	// Without agents the agents API answers so, and a run naming an agent is refused.
	plain := setup(t, options{})
	plain.apiError(req{method: "GET", path: "/v1/agents", token: alice}, 404, "agents_disabled")
	plain.apiError(req{method: "GET", path: "/v1/models", token: alice}, 404, "agents_disabled")
	plain.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hi", "agentId": "x"}}, 404, "agent_not_found")
}

// An agent's knowledge names the collections its retrieval searches.
func TestAgentKnowledgeCollections(t *testing.T) {
	t.Parallel()
	e := agentsSetup(t, options{knowledge: true})
	for _, d := range []map[string]any{
		{"source": "refunds.md", "text": "Refunds are paid within five days.", "collection": "support"},
		{"source": "offers.md", "text": "Refunds are never paid on spring offers.", "collection": "sales"},
	} {
		if got := e.call(req{method: "POST", path: "/v1/knowledge/documents", token: alice, body: d}, 201); got["collection"] != d["collection"] {
			t.Fatalf("document %v", got)
		}
	}
	e.apiError(req{method: "POST", path: "/v1/knowledge/documents", token: alice, body: map[string]any{"source": "x.md", "text": "x", "collection": "a b"}}, 422, "invalid_field")
	if docs := e.call(req{method: "GET", path: "/v1/knowledge/documents?collection=sales", token: alice}, 200)["documents"].([]any); len(docs) != 1 {
		t.Fatalf("documents of sales %v", docs)
	}
	sales := e.createAgent(root, map[string]any{"name": "Sales", "model": "offline", "knowledge": []string{"sales"}})["id"].(string)
	none := e.createAgent(root, map[string]any{"name": "Closed", "model": "offline", "knowledge": []string{}})["id"].(string)
	fs := e.chat(alice, map[string]any{"input": "Are refunds paid?", "agentId": sales})
	ret, ok := find(fs, "retrieval")
	if !ok {
		t.Fatalf("no retrieval: %v", names(fs))
	}
	hits := ret.Data["hits"].([]any)
	if len(hits) != 1 || hits[0].(map[string]any)["source"] != "offers.md" {
		t.Fatalf("hits %v", hits)
	}
	if _, ok := find(e.chat(alice, map[string]any{"input": "Are refunds paid?", "agentId": none}), "retrieval"); ok {
		t.Fatal("an agent without knowledge retrieved")
	}
	fs = e.chat(alice, map[string]any{"input": "Are refunds paid?"})
	if ret, ok := find(fs, "retrieval"); !ok || len(ret.Data["hits"].([]any)) != 2 {
		t.Fatalf("the built-in agent searches every collection: %v", ret.Data)
	}
}
