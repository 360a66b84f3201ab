package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/llm/openai"
	"github.com/agentchat/agentchat/internal/tool"
	"github.com/agentchat/agentchat/internal/tool/builtin"
	"github.com/agentchat/agentchat/internal/tool/mcptool"
)

// feishu is a fake Feishu custom-bot webhook that records what it was sent.
type feishu struct {
	mu   sync.Mutex
	got  []map[string]any
	srv  *httptest.Server
	hits chan struct{}
}

func newFeishu(t *testing.T) *feishu {
	f := &feishu{hits: make(chan struct{}, 16)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.got = append(f.got, body)
		f.mu.Unlock()
		f.hits <- struct{}{}
		w.Write([]byte(`{"code":0,"msg":"success","data":{}}`))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *feishu) texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, b := range f.got {
		if b["msg_type"] != "text" {
			out = append(out, "bad msg_type")
			continue
		}
		out = append(out, b["content"].(map[string]any)["text"].(string))
	}
	return out
}

func toolStates(fs []native) []string {
	var out []string
	for _, f := range fs {
		if f.Event == "tool.state" {
			out = append(out, f.Data["name"].(string)+":"+f.Data["status"].(string))
		}
	}
	return out
}

func TestReadToolIsTracedAndStored(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	frames := e.chat(alice, map[string]any{"input": "What time is it in Asia/Shanghai?"})
	if got := strings.Join(toolStates(frames), ","); got != "get_current_time:pending,get_current_time:running,get_current_time:succeeded" {
		t.Fatalf("tool states %s", got)
	}
	var done native
	for _, f := range frames {
		if f.Event == "tool.state" && f.Data["status"] == "succeeded" {
			done = f
		}
	}
	if done.Data["output"].(map[string]any)["timezone"] != "Asia/Shanghai" || done.Data["toolCallId"] == "" {
		t.Fatalf("succeeded state %v", done.Data)
	}
	if last(frames).Data["status"] != "succeeded" {
		t.Fatalf("end %v", last(frames).Data)
	}
	conv := frames[0].Data["conversationId"].(string)
	all := e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/messages", token: alice}, 200)["messages"].([]any)
	roles := []string{}
	for _, m := range all {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if strings.Join(roles, ",") != "user,assistant,tool,assistant" {
		t.Fatalf("roles %v", roles)
	}
	tools := e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/messages?tool_name=get_current_time", token: alice}, 200)["messages"].([]any)
	if len(tools) != 1 {
		t.Fatalf("tool filter gave %d", len(tools))
	}
	meta := tools[0].(map[string]any)["metadata"].(map[string]any)
	if meta["tool_name"] != "get_current_time" || meta["status"] != "success" || meta["tool_call_id"] != done.Data["toolCallId"] ||
		meta["tool_call_args"].(map[string]any)["timezone"] != "Asia/Shanghai" || meta["tool_agent_output"] == nil || meta["result"] == "" {
		t.Fatalf("tool message metadata %v", meta)
	}
	if none := e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/messages?tool_name=calculator", token: alice}, 200)["messages"].([]any); len(none) != 0 {
		t.Fatalf("filter leaked %v", none)
	}
	list := e.call(req{method: "GET", path: "/v1/tools", token: alice}, 200)["tools"].([]any)
	policy := map[string]string{}
	for _, x := range list {
		m := x.(map[string]any)
		policy[m["name"].(string)] = m["confirm"].(string)
		if m["parameters"] == nil {
			t.Fatalf("tool %v without schema", m)
		}
	}
	if policy["send_feishu_message"] != "always" || policy["send_webhook"] != "always" || policy["get_current_time"] != "never" || policy["calculator"] != "never" {
		t.Fatalf("policies %v", policy)
	}
}

// awaitConfirmation starts a Feishu send and reads until the tool awaits a person.
func awaitConfirmation(t *testing.T, e *env, token, text string) (frames []native, confirmationID string, body func() []native, close func()) {
	t.Helper()
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: token, body: map[string]any{"input": fmt.Sprintf(`Send a Feishu message saying "%s"`, text)}})
	frames = readNative(t, rd, "tool.awaiting_input")
	aw := last(frames)
	if aw.Event != "tool.awaiting_input" || aw.Data["confirmationId"] == "" || aw.Data["status"] != "awaiting_input" {
		t.Fatalf("no awaiting_input: %v", names(frames))
	}
	state := frames[len(frames)-2]
	if state.Event != "tool.state" || state.Data["status"] != "awaiting_input" || state.Data["confirmationId"] != aw.Data["confirmationId"] {
		t.Fatalf("tool.state before awaiting %v", state)
	}
	return frames, aw.Data["confirmationId"].(string), func() []native { return readNative(t, rd, "") }, func() { resp.Body.Close() }
}

func TestConfirmationApprove(t *testing.T) {
	t.Parallel()
	hook := newFeishu(t)
	e := setup(t, options{builtin: builtin.Config{Feishu: builtin.FeishuConfig{WebhookURL: hook.srv.URL}}})
	frames, cid, rest, closeStream := awaitConfirmation(t, e, alice, "deploy done")
	defer closeStream()
	runID := frames[1].Data["runId"].(string)
	pending := e.call(req{method: "GET", path: "/v1/agent/confirmations?status=pending", token: alice}, 200)["confirmations"].([]any)
	if len(pending) != 1 || pending[0].(map[string]any)["id"] != cid || pending[0].(map[string]any)["toolName"] != "send_feishu_message" {
		t.Fatalf("pending %v", pending)
	}
	if len(hook.texts()) != 0 {
		t.Fatal("the message was sent before approval")
	}
	decided := e.call(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "approve"}}, 200)
	if decided["status"] != "approved" || decided["decidedAt"] == "" {
		t.Fatalf("decision %v", decided)
	}
	after := rest()
	if got := strings.Join(toolStates(after), ","); got != "send_feishu_message:running,send_feishu_message:succeeded" {
		t.Fatalf("states after approval %s (%v)", got, names(after))
	}
	if end := last(after); end.Event != "agent.end" || end.Data["status"] != "succeeded" {
		t.Fatalf("end %v", end)
	}
	if got := hook.texts(); len(got) != 1 || got[0] != "deploy done" {
		t.Fatalf("webhook got %v", got)
	}
	msg, _ := find(after, "agent.message")
	if !strings.Contains(msg.Data["content"].(string), "sent") {
		t.Fatalf("answer %v", msg.Data)
	}
	// Repeating the decision answers the same; a different one is a conflict.
	again := e.call(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "approve"}}, 200)
	if again["decidedAt"] != decided["decidedAt"] {
		t.Fatalf("repeat changed the decision: %v", again)
	}
	e.apiError(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "reject"}}, 409, "confirmation_already_decided")
	if len(hook.texts()) != 1 {
		t.Fatal("a repeated decision sent the message again")
	}
	tl := e.call(req{method: "GET", path: "/v1/agent/runs/" + runID + "/timeline", token: alice}, 200)["events"].([]any)
	var seen []string
	for _, x := range tl {
		ev := x.(map[string]any)
		if ev["event"] == "tool.state" {
			seen = append(seen, ev["payload"].(map[string]any)["status"].(string))
		}
	}
	if strings.Join(seen, ",") != "pending,awaiting_input,running,succeeded" {
		t.Fatalf("timeline tool states %v", seen)
	}
}

func TestConfirmationRejectAndEdit(t *testing.T) {
	t.Parallel()
	hook := newFeishu(t)
	e := setup(t, options{builtin: builtin.Config{Feishu: builtin.FeishuConfig{WebhookURL: hook.srv.URL}}})

	_, cid, rest, closeStream := awaitConfirmation(t, e, alice, "ship it")
	e.call(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "reject", "reason": "not today"}}, 200)
	after := rest()
	closeStream()
	var denied native
	for _, f := range after {
		if f.Event == "tool.state" && f.Data["status"] == "failed" {
			denied = f
		}
	}
	if denied.Data["denied"] != true || !strings.Contains(fmt.Sprint(denied.Data["content"]), "not today") {
		t.Fatalf("rejected state %v (%v)", denied.Data, toolStates(after))
	}
	if msg, _ := find(after, "agent.message"); !strings.Contains(msg.Data["content"].(string), "did not send") {
		t.Fatalf("answer after reject %v", msg.Data)
	}
	if last(after).Data["status"] != "succeeded" || len(hook.texts()) != 0 {
		t.Fatalf("after reject: end %v, sent %v", last(after).Data, hook.texts())
	}

	_, cid, rest, closeStream = awaitConfirmation(t, e, alice, "original")
	defer closeStream()
	e.apiError(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "maybe"}}, 422, "invalid_field")
	e.apiError(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "approve", "args": "text"}}, 400, "invalid_field")
	e.call(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "approve", "args": map[string]any{"text": "edited by a person"}}}, 200)
	rest()
	if got := hook.texts(); len(got) != 1 || got[0] != "edited by a person" {
		t.Fatalf("webhook got %v", got)
	}
}

func TestConfirmationBelongsToItsOwner(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	_, cid, _, closeStream := awaitConfirmation(t, e, alice, "secret")
	defer closeStream()
	for _, other := range []string{bob, eve} {
		e.apiError(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: other, body: map[string]any{"decision": "approve"}}, 404, "confirmation_not_found")
		if l := e.call(req{method: "GET", path: "/v1/agent/confirmations", token: other}, 200)["confirmations"].([]any); len(l) != 0 {
			t.Fatalf("%s sees alice's confirmations", other)
		}
	}
	e.apiError(req{method: "POST", path: "/v1/agent/confirmations/nope", token: alice, body: map[string]any{"decision": "approve"}}, 404, "confirmation_not_found")
}

func TestConfirmationExpires(t *testing.T) {
	t.Parallel()
	e := setup(t, options{confirmTTL: 50 * time.Millisecond})
	_, cid, rest, closeStream := awaitConfirmation(t, e, alice, "too late")
	defer closeStream()
	after := rest() // the sweep expires it and the run ends
	end := last(after)
	if end.Event != "agent.end" || end.Data["status"] != "failed" || end.Data["error"].(map[string]any)["code"] != "confirmation_expired" {
		t.Fatalf("end %v", end)
	}
	if msg, ok := find(after, "agent.message"); !ok || !strings.Contains(msg.Data["content"].(string), "in time") {
		t.Fatalf("no readable message: %v", names(after))
	}
	e.apiError(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "approve"}}, 410, "confirmation_expired")
}

// The decision works with no stream open; a client reattaches and sees the continuation.
func TestConfirmationWithoutTheStream(t *testing.T) {
	t.Parallel()
	hook := newFeishu(t)
	e := setup(t, options{builtin: builtin.Config{Feishu: builtin.FeishuConfig{WebhookURL: hook.srv.URL}}})
	frames, cid, _, closeStream := awaitConfirmation(t, e, alice, "offline approval")
	closeStream()
	e.call(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "approve"}}, 200)
	rd, resp := e.stream(req{method: "GET", path: "/v1/agent/runs/" + frames[1].Data["runId"].(string) + "/events", token: alice, header: map[string]string{"Last-Event-ID": last(frames).ID}})
	defer resp.Body.Close()
	after := readNative(t, rd, "")
	if strings.Join(toolStates(after), ",") != "send_feishu_message:running,send_feishu_message:succeeded" || last(after).Data["status"] != "succeeded" {
		t.Fatalf("continuation %v", names(after))
	}
}

// A run awaiting input survives a restart: the decision continues it from the store.
func TestConfirmationSurvivesRestart(t *testing.T) {
	t.Parallel()
	hook := newFeishu(t)
	cfg := builtin.Config{Feishu: builtin.FeishuConfig{WebhookURL: hook.srv.URL}}
	first := setup(t, options{builtin: cfg})
	frames, cid, _, closeStream := awaitConfirmation(t, first, alice, "after restart")
	closeStream()
	first.stop()

	second := setup(t, options{builtin: cfg, dbPath: first.dbPath})
	runID := frames[1].Data["runId"].(string)
	if r := second.call(req{method: "GET", path: "/v1/agent/runs/" + runID, token: alice}, 200); r["status"] != "awaiting_input" {
		t.Fatalf("after restart the run is %v", r["status"])
	}
	second.call(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "approve"}}, 200)
	rd, resp := second.stream(req{method: "GET", path: "/v1/agent/runs/" + runID + "/events", token: alice, header: map[string]string{"Last-Event-ID": last(frames).ID}})
	defer resp.Body.Close()
	after := readNative(t, rd, "")
	if last(after).Data["status"] != "succeeded" || len(hook.texts()) != 1 {
		t.Fatalf("after restart: %v, sent %v", names(after), hook.texts())
	}
	// The model's context after the restart is the history it saw: the
	// stored messages hold the call and its result in order.
	conv := frames[0].Data["conversationId"].(string)
	msgs := second.call(req{method: "GET", path: "/v1/conversations/" + conv + "/messages", token: alice}, 200)["messages"].([]any)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if strings.Join(roles, ",") != "user,assistant,tool,assistant" {
		t.Fatalf("stored history %v", roles)
	}
}

func TestParallelToolsAndToolErrors(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	frames := e.chat(alice, map[string]any{"input": "What time is it, and calculate 6*7"})
	states := toolStates(frames)
	succeeded := 0
	for _, s := range states {
		if strings.HasSuffix(s, ":succeeded") {
			succeeded++
		}
	}
	if succeeded != 2 || last(frames).Data["status"] != "succeeded" {
		t.Fatalf("parallel calls: %v", states)
	}
	msg, _ := find(frames, "agent.message")
	if !strings.Contains(msg.Data["content"].(string), "42") {
		t.Fatalf("answer %v", msg.Data)
	}
	// A tool that fails is reported to the model, which answers; the run succeeds.
	frames = e.chat(alice, map[string]any{"input": "calculate 1/0"})
	var failed native
	for _, f := range frames {
		if f.Event == "tool.state" && f.Data["status"] == "failed" {
			failed = f
		}
	}
	if failed.Data["error"] == nil || last(frames).Data["status"] != "succeeded" {
		t.Fatalf("tool error: %v / %v", failed.Data, last(frames).Data)
	}
}

// hang is a tool that never answers on its own.
type hang struct{}

func (hang) Spec() tool.Spec {
	return tool.Spec{Name: "slow_lookup", Description: "never answers", Parameters: json.RawMessage(`{"type":"object"}`), Confirm: tool.ConfirmNever, Timeout: 50 * time.Millisecond}
}

func (hang) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	<-ctx.Done()
	return tool.Result{}, ctx.Err()
}

// scriptedCalls is a fake model that calls one tool, then answers.
func scriptedCalls(t *testing.T, name, args string) llmtest.Options {
	return llmtest.Options{Replies: []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: name, Args: []string{args[:len(args)/2], args[len(args)/2:]}}}},
		llmtest.TextReply("I looked into it."),
	}}
}

func TestToolTimeoutAndInvalidArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tool, args, want string
	}{
		{"timeout", "slow_lookup", `{}`, "timed out"},
		{"invalid arguments", "calculator", `{"expr": 1}`, "invalid arguments"},
		{"unknown tool", "format_disk", `{}`, "unknown tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			model, up := openaiModel(t, scriptedCalls(t, tt.tool, tt.args), openai.Config{})
			e := setup(t, options{model: model, extraTools: []tool.Tool{hang{}}})
			frames := e.chat(alice, map[string]any{"input": "go"})
			var failed native
			for _, f := range frames {
				if f.Event == "tool.state" && f.Data["status"] == "failed" {
					failed = f
				}
			}
			if !strings.Contains(fmt.Sprint(failed.Data["error"]), tt.want) || last(frames).Data["status"] != "succeeded" {
				t.Fatalf("failed state %v, end %v", failed.Data, last(frames).Data)
			}
			// The model was told: its second request carries the tool's error.
			reqs := up.Requests()
			if len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), "Error: ") {
				t.Fatalf("the model did not see the error: %d requests", len(reqs))
			}
		})
	}
}

func TestIterationBound(t *testing.T) {
	t.Parallel()
	e := setup(t, options{maxIterations: 3})
	frames := e.chat(alice, map[string]any{"input": "loop forever"})
	msg, _ := find(frames, "agent.message")
	if !strings.Contains(msg.Data["content"].(string), "3 steps") || last(frames).Data["status"] != "succeeded" {
		t.Fatalf("bound: %v / %v", msg.Data, last(frames).Data)
	}
	if n := countEvent(frames, "tool.state"); n != 9 { // three calls, pending → running → succeeded
		t.Fatalf("%d tool states", n)
	}
}

// An MCP server's tools join the registry and run through the same loop.
func TestMCPTool(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1"}, nil)
	type in struct {
		City string `json:"city"`
	}
	type out struct {
		Forecast string `json:"forecast"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "forecast", Description: "Weather forecast", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
			return nil, out{Forecast: "sunny in " + a.City}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			ss.Close()
		}
	})
	var client *mcptool.Client
	model, _ := openaiModel(t, scriptedCalls(t, "weather__forecast", `{"city":"Hangzhou"}`), openai.Config{})
	e := setup(t, options{model: model, tools: func(reg *tool.Registry) {
		var err error
		client, err = mcptool.Connect(context.Background(), reg, mcptool.Config{Servers: map[string]mcptool.ServerConfig{"weather": {URL: hs.URL}}})
		if err != nil {
			t.Fatal(err)
		}
	}})
	t.Cleanup(func() { client.Close() })
	frames := e.chat(alice, map[string]any{"input": "weather?"})
	var done native
	for _, f := range frames {
		if f.Event == "tool.state" && f.Data["status"] == "succeeded" {
			done = f
		}
	}
	if !strings.Contains(fmt.Sprint(done.Data["output"]), "sunny in Hangzhou") {
		t.Fatalf("MCP result %v (%v)", done.Data, toolStates(frames))
	}
	list := e.call(req{method: "GET", path: "/v1/tools", token: alice}, 200)
	if !strings.Contains(fmt.Sprint(list["tools"]), "weather__forecast") || !strings.Contains(fmt.Sprint(list["mcpServers"]), "weather") {
		t.Fatalf("tools %v", list)
	}
}
