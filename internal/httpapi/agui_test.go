package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/dialect/agui/aguitest"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/llm/openai"
	"github.com/agentchat/agentchat/internal/ssetest"
	"github.com/agentchat/agentchat/internal/tool/builtin"
)

// streamBound bounds every read of an AG-UI stream: a stream that stops
// short fails the test instead of hanging it.
const streamBound = 20 * time.Second

// aguiStream opens an AG-UI SSE request.
func (e *env) aguiStream(r req) (*ssetest.Reader, *http.Response) {
	e.t.Helper()
	if r.header == nil {
		r.header = map[string]string{}
	}
	r.header["Accept"] = "text/event-stream"
	rd, resp := e.stream(r)
	timer := time.AfterFunc(streamBound, func() { resp.Body.Close() })
	e.t.Cleanup(func() { timer.Stop() })
	return rd, resp
}

// readAGUI reads AG-UI frames, checking each (schema, strict when set; no
// null; event equal to type; an id on every frame), until the stream ends
// or, when stop is set, until stop says so after a frame.
func readAGUI(t *testing.T, rd *ssetest.Reader, strict bool, stop func(aguitest.Event) bool) []aguitest.Event {
	t.Helper()
	var out []aguitest.Event
	for i := 0; ; i++ {
		f, err := rd.Next()
		if err == io.EOF && stop == nil {
			return out
		}
		if err != nil {
			t.Fatalf("stream broke after %d events: %v", len(out), err)
		}
		if f.Comment != "" || f.Event == "" {
			continue
		}
		ev := aguitest.DecodeFrame(t, i, f.ID, f.Event, f.Data, strict, true)
		out = append(out, ev)
		if stop != nil && stop(ev) {
			return out
		}
	}
}

// runEnds stops after the n-th RUN_FINISHED or RUN_ERROR.
func runEnds(n int) func(aguitest.Event) bool {
	seen := 0
	return func(ev aguitest.Event) bool {
		if t := ev.Type(); t == "RUN_FINISHED" || t == "RUN_ERROR" {
			seen++
		}
		return seen >= n
	}
}

func evTypes(evs []aguitest.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type())
	}
	return out
}

func ofType(evs []aguitest.Event, typ string) []aguitest.Event {
	var out []aguitest.Event
	for _, ev := range evs {
		if ev.Type() == typ {
			out = append(out, ev)
		}
	}
	return out
}

func textOf(evs []aguitest.Event) string {
	var b strings.Builder
	for _, ev := range ofType(evs, "TEXT_MESSAGE_CONTENT") {
		b.WriteString(ev.Str("delta"))
	}
	return b.String()
}

func userMsg(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "content": text}
}

// input is a RunAgentInput.
func input(thread, runID string, msgs ...map[string]any) map[string]any {
	return map[string]any{"threadId": thread, "runId": runID, "messages": msgs, "tools": []any{}, "context": []any{},
		"state": map[string]any{}, "forwardedProps": map[string]any{}}
}

// aguiRun posts a RunAgentInput to the single endpoint and reads the whole
// stream, which must close by itself after one AG-UI run and carry only
// standard fields.
func (e *env) aguiRun(token string, in map[string]any) []aguitest.Event {
	e.t.Helper()
	rd, resp := e.aguiStream(req{method: "POST", path: "/api/v1/agent/runs", token: token, body: in})
	defer resp.Body.Close()
	evs := readAGUI(e.t, rd, true, nil)
	aguitest.Verify(e.t, evs)
	if n := len(ofType(evs, "RUN_FINISHED")) + len(ofType(evs, "RUN_ERROR")); n != 1 || evs[0].Type() != "RUN_STARTED" {
		e.t.Fatalf("one AG-UI run expected: %v", evTypes(evs))
	}
	return evs
}

func TestAGUISingleEndpoint(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	evs := e.aguiRun(alice, input("thread-1", "run-a", userMsg("msg-u1", "Hello there")))
	// The input's state (HttpAgent's default {}) is the thread's: the run opens with it.
	want := []string{"RUN_STARTED", "STATE_SNAPSHOT", "STEP_STARTED", "STEP_FINISHED", "STEP_STARTED", "TEXT_MESSAGE_START"}
	if got := evTypes(evs); !slices.Equal(got[:6], want) || got[len(got)-2] != "STEP_FINISHED" || got[len(got)-1] != "RUN_FINISHED" {
		t.Fatalf("events %v", got)
	}
	if s := evs[0]; s.Str("threadId") != "thread-1" || s.Str("runId") != "run-a" {
		t.Fatalf("RUN_STARTED %v", s.Data)
	}
	if snap, ok := evs[1].Data["snapshot"].(map[string]any); !ok || len(snap) != 0 {
		t.Fatalf("STATE_SNAPSHOT %v", evs[1].Data)
	}
	if evs[2].Str("stepName") != "router" || evs[4].Str("stepName") != "worker" {
		t.Fatalf("steps %v %v", evs[2].Data, evs[4].Data)
	}
	// The structured answer streams as prose and ends as RUN_FINISHED's result.
	end := evs[len(evs)-1]
	result, _ := end.Data["result"].(map[string]any)
	text := textOf(evs)
	if strings.HasPrefix(text, "{") || !strings.Contains(text, "Hello there") || result["answer"] != text ||
		result["result_type"] == nil || result["status"] != "success" || result["ui_schema"] == nil {
		t.Fatalf("text %q, result %v", text, result)
	}
	if end.Str("runId") != "run-a" || end.Str("threadId") != "thread-1" {
		t.Fatalf("RUN_FINISHED %v", end.Data)
	}
	// The thread exists now under the client's id; a second run continues it.
	msgs := e.call(req{method: "GET", path: "/v1/conversations/" + e.threadConversation(alice, "thread-1") + "/messages", token: alice}, 200)["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["content"] != "Hello there" || msgs[1].(map[string]any)["content"] != text {
		t.Fatalf("stored %v", msgs)
	}
	evs = e.aguiRun(alice, input("thread-1", "run-b", userMsg("msg-u1", "Hello there"), userMsg("msg-u2", "And again")))
	if evs[0].Str("runId") != "run-b" || !strings.Contains(textOf(evs), "And again") {
		t.Fatalf("second run %v %q", evs[0].Data, textOf(evs))
	}
	// Without threadId or runId the server names them.
	evs = e.aguiRun(alice, map[string]any{"messages": []any{userMsg("", "hi")}})
	if evs[0].Str("threadId") == "" || evs[0].Str("runId") == "" {
		t.Fatalf("RUN_STARTED %v", evs[0].Data)
	}
}

func TestAGUIAcceptedThenEvents(t *testing.T) {
	t.Parallel()
	e := setup(t, options{ping: 20 * time.Millisecond})
	got := e.call(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: input("", "run-1", userMsg("u1", "What time is it in Tokyo?"))}, 202)
	thread, _ := got["threadId"].(string)
	if got["taskId"] == "" || thread == "" || got["runId"] != "run-1" || got["created"] != true {
		t.Fatalf("202 %v", got)
	}
	rd, resp := e.aguiStream(req{method: "GET", path: "/api/v1/agent/runs/" + thread + "/events", token: alice})
	defer resp.Body.Close()
	evs := readAGUI(t, rd, false, runEnds(1))
	aguitest.Verify(t, evs)
	for _, ev := range evs {
		if ev.Str("threadId") != thread || ev.Str("runId") != "run-1" {
			t.Fatalf("%s lacks seed threadId/runId: %v", ev.Type(), ev.Data)
		}
	}
	steps := ofType(evs, "STEP_STARTED")
	if len(steps) != 2 || steps[0].Str("stepName") != "router" || steps[1].Str("stepName") != "worker" {
		t.Fatalf("steps %v", steps)
	}
	res := ofType(evs, "TOOL_CALL_RESULT")
	if len(res) != 1 || res[0].Str("tool_name") != "get_current_time" || res[0].Str("tool_call_id") != res[0].Str("toolCallId") ||
		res[0].Str("status") != "success" || res[0].Str("result") != res[0].Str("content") || res[0].Data["tool_call_args"] == nil {
		t.Fatalf("TOOL_CALL_RESULT %v", res)
	}
	if args := ofType(evs, "TOOL_CALL_ARGS"); args[len(args)-1].Data["args"] == nil {
		t.Fatalf("the completing TOOL_CALL_ARGS lacks the args object: %v", args)
	}
	var final aguitest.Event
	for _, end := range ofType(evs, "TEXT_MESSAGE_END") {
		if end.Data["answer"] != nil {
			final = end
		}
	}
	if final.Data == nil || final.Str("role") != "assistant" || final.Str("stage") != "worker" || final.Str("status") != "success" ||
		final.Data["ui_schema"] == nil || final.Data["key_points"] == nil || final.Str("result_type") == "" {
		t.Fatalf("final TEXT_MESSAGE_END %v", final.Data)
	}
	// The stream stays open, says it is alive, and follows the next run.
	for {
		f, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.Comment == "keep-alive" {
			break
		}
		if f.Event != "" {
			t.Fatalf("unexpected frame %+v", f)
		}
	}
	again := e.call(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: input(thread, "run-2", userMsg("u2", "thanks"))}, 202)
	if again["created"] != false || again["threadId"] != thread {
		t.Fatalf("second 202 %v", again)
	}
	more := readAGUI(t, rd, false, runEnds(1))
	aguitest.Verify(t, append(evs, more...))
	if more[0].Type() != "RUN_STARTED" || more[0].Str("runId") != "run-2" {
		t.Fatalf("next run %v", evTypes(more))
	}
}

// hook is a webhook target that records what it was sent.
type hook struct {
	mu  sync.Mutex
	got []string
	srv *httptest.Server
}

func newHook(t *testing.T) *hook {
	h := &hook{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got = append(h.got, string(b))
		h.mu.Unlock()
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.got)
}

// interrupted runs an input that asks for a webhook and returns the stream
// (ending in the interrupt) and the interrupt.
func interrupted(t *testing.T, e *env, thread, runID string) ([]aguitest.Event, map[string]any) {
	t.Helper()
	evs := e.aguiRun(alice, input(thread, runID, userMsg(runID+"-u", `Send a webhook saying "deploy done"`)))
	end := evs[len(evs)-1]
	outcome, _ := end.Data["outcome"].(map[string]any)
	if end.Type() != "RUN_FINISHED" || outcome["type"] != "interrupt" {
		t.Fatalf("no interrupt: %v", evTypes(evs))
	}
	in := outcome["interrupts"].([]any)[0].(map[string]any)
	calls := ofType(evs, "TOOL_CALL_START")
	if in["reason"] != "confirmation" || in["id"] == "" || in["toolCallId"] != calls[0].Str("toolCallId") ||
		in["expiresAt"] == nil || in["message"] == nil || in["responseSchema"] == nil || calls[0].Str("toolCallName") != "send_webhook" {
		t.Fatalf("interrupt %v", in)
	}
	return evs, in
}

func resumeInput(thread, runID, interruptID string, status string, payload any) map[string]any {
	in := input(thread, runID)
	entry := map[string]any{"interruptId": interruptID, "status": status}
	if payload != nil {
		entry["payload"] = payload
	}
	in["resume"] = []any{entry}
	return in
}

func TestAGUIInterruptApproveAndDeny(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		status   string
		payload  any
		approved bool
	}{
		{"approve", "resolved", map[string]any{"approved": true}, true},
		{"deny", "resolved", map[string]any{"approved": false, "reason": "not now"}, false},
		{"cancel", "cancelled", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHook(t)
			e := setup(t, options{builtin: builtin.Config{Webhook: builtin.WebhookConfig{URL: h.srv.URL}}})
			first, in := interrupted(t, e, "t-"+tt.name, "run-1")
			pending := e.call(req{method: "GET", path: "/v1/agent/confirmations?status=pending", token: alice}, 200)["confirmations"].([]any)
			if len(pending) != 1 || pending[0].(map[string]any)["id"] != in["id"] {
				t.Fatalf("pending %v", pending)
			}
			second := e.aguiRun(alice, resumeInput("t-"+tt.name, "run-2", in["id"].(string), tt.status, tt.payload))
			if s := second[0]; s.Type() != "RUN_STARTED" || s.Str("runId") != "run-2" || s.Str("threadId") != "t-"+tt.name {
				t.Fatalf("continuation starts %v", s.Data)
			}
			var steps []string
			for _, ev := range ofType(second, "STEP_STARTED") {
				steps = append(steps, ev.Str("stepName"))
			}
			if !slices.Equal(steps, []string{"router", "worker"}) {
				t.Fatalf("continuation steps %v", steps)
			}
			res := ofType(second, "TOOL_CALL_RESULT")
			if len(res) != 1 || res[0].Str("toolCallId") != in["toolCallId"] {
				t.Fatalf("results %v", res)
			}
			if end := second[len(second)-1]; end.Type() != "RUN_FINISHED" || end.Data["outcome"] != nil || end.Str("runId") != "run-2" {
				t.Fatalf("end %v", end.Data)
			}
			if tt.approved != (h.calls() == 1) || h.calls() > 1 {
				t.Fatalf("webhook called %d times", h.calls())
			}
			if !tt.approved && !strings.Contains(res[0].Str("content"), "declined") {
				t.Fatalf("denied result %v", res[0].Data)
			}
			// The two AG-UI runs together are one valid stream, and the
			// thread's seed stream tells the same story with the same ids.
			aguitest.Verify(t, append(first, second...))
			rd, resp := e.aguiStream(req{method: "GET", path: "/api/v1/agent/runs/t-" + tt.name + "/events", token: alice})
			defer resp.Body.Close()
			seed := readAGUI(t, rd, false, runEnds(2))
			aguitest.Verify(t, seed)
			var runs []string
			for _, ev := range ofType(seed, "RUN_STARTED") {
				runs = append(runs, ev.Str("runId"))
			}
			if !slices.Equal(runs, []string{"run-1", "run-2"}) {
				t.Fatalf("seed stream runs %v", runs)
			}
			if c := e.call(req{method: "GET", path: "/v1/agent/confirmations", token: alice}, 200)["confirmations"].([]any)[0].(map[string]any); (c["status"] == "approved") != tt.approved {
				t.Fatalf("confirmation %v", c)
			}
		})
	}
}

// Exactly one decision wins, whichever door it comes through.
func TestAGUIDoubleDecision(t *testing.T) {
	t.Parallel()
	h := newHook(t)
	e := setup(t, options{builtin: builtin.Config{Webhook: builtin.WebhookConfig{URL: h.srv.URL}}})
	_, in := interrupted(t, e, "t-double", "run-1")
	id := in["id"].(string)
	var wg sync.WaitGroup
	var resumeStatus, confirmStatus int
	wg.Go(func() {
		resp := e.send(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: resumeInput("t-double", "run-2", id, "resolved", map[string]any{"approved": true}),
			header: map[string]string{"Accept": "text/event-stream"}})
		defer resp.Body.Close()
		resumeStatus = resp.StatusCode
		io.Copy(io.Discard, resp.Body)
	})
	wg.Go(func() {
		resp := e.send(req{method: "POST", path: "/v1/agent/confirmations/" + id, token: alice, body: map[string]any{"decision": "reject"}})
		defer resp.Body.Close()
		confirmStatus = resp.StatusCode
	})
	wg.Wait()
	if (resumeStatus == 200) == (confirmStatus == 200) || resumeStatus+confirmStatus != 200+409 {
		t.Fatalf("resume answered %d, confirmation %d: exactly one must win", resumeStatus, confirmStatus)
	}
	c := e.call(req{method: "GET", path: "/v1/agent/confirmations", token: alice}, 200)["confirmations"].([]any)[0].(map[string]any)
	if (c["status"] == "approved") != (resumeStatus == 200) {
		t.Fatalf("confirmation %v after resume %d", c, resumeStatus)
	}
	// The losing decision, sent again through resume, is refused; the
	// winning one repeated replays the continuation.
	winner, loser := map[string]any{"approved": true}, map[string]any{"approved": false}
	if resumeStatus != 200 {
		winner, loser = loser, winner
	}
	e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: resumeInput("t-double", "run-3", id, "resolved", loser)}, 409, "interrupt_already_resolved")
	evs := e.aguiRun(alice, resumeInput("t-double", "run-4", id, "resolved", winner))
	if evs[len(evs)-1].Type() != "RUN_FINISHED" || len(ofType(evs, "TOOL_CALL_RESULT")) != 1 {
		t.Fatalf("replayed continuation %v", evTypes(evs))
	}
	if h.calls() > 1 {
		t.Fatalf("the webhook ran %d times", h.calls())
	}
}

// Every Last-Event-ID (and ?after=) resumes the thread stream exactly: the
// frames after the id are those of the whole stream, and with the frames
// before it they pass the verifier.
func TestAGUIEventsResumeFromEveryID(t *testing.T) {
	t.Parallel()
	h := newHook(t)
	e := setup(t, options{builtin: builtin.Config{Webhook: builtin.WebhookConfig{URL: h.srv.URL}}})
	_, in := interrupted(t, e, "t-resume", "run-1")
	e.aguiRun(alice, resumeInput("t-resume", "run-2", in["id"].(string), "resolved", map[string]any{"approved": true}))
	e.aguiRun(alice, input("t-resume", "run-3", userMsg("u3", "Think, then calculate 6*7")))

	rd, resp := e.aguiStream(req{method: "GET", path: "/api/v1/agent/runs/t-resume/events", token: alice})
	full := readAGUI(t, rd, false, runEnds(3))
	resp.Body.Close()
	aguitest.Verify(t, full)
	if len(ofType(full, "REASONING_MESSAGE_CONTENT")) == 0 || len(ofType(full, "TOOL_CALL_RESULT")) != 2 {
		t.Fatalf("the script lacks reasoning or tools: %v", evTypes(full))
	}
	lastID := full[len(full)-1].ID
	var ids []string
	for _, ev := range full {
		if slices.Contains(ids, ev.ID) {
			t.Fatalf("two frames have id %s", ev.ID)
		}
		ids = append(ids, ev.ID)
	}
	for i, id := range append([]string{"0"}, ids[:len(ids)-1]...) {
		r := req{method: "GET", path: "/api/v1/agent/runs/t-resume/events", token: alice, header: map[string]string{"Last-Event-ID": id}}
		if i%2 == 1 {
			r = req{method: "GET", path: "/api/v1/agent/runs/t-resume/events?after=" + id, token: alice}
		}
		rd, resp := e.aguiStream(r)
		rest := readAGUI(t, rd, false, func(ev aguitest.Event) bool { return ev.ID == lastID && ev.Type() == "RUN_FINISHED" })
		resp.Body.Close()
		before := full[:i] // the frames up to and including the one with id
		if want := full[i:]; !reflect.DeepEqual(rest, want) {
			t.Fatalf("after %s: got %v\nwant %v", id, evTypes(rest), evTypes(want))
		}
		aguitest.Verify(t, append(before, rest...))
	}
	e.apiError(req{method: "GET", path: "/api/v1/agent/runs/t-resume/events", token: alice, header: map[string]string{"Last-Event-ID": "x"}}, 400, "invalid_last_event_id")
}

// A frontend tool call ends the run with the call pending; the tool message
// in the next input continues it.
func TestAGUIFrontendTool(t *testing.T) {
	t.Parallel()
	up := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{ID: "call_pick", Name: "pick_colour", Args: []string{`{"palette":`, `"warm"}`}}}},
		llmtest.TextReply(`{"answer":"You picked red.","key_points":["red"],"result_type":"execution_report","status":"success"}`),
	}})
	m, err := openai.New(openai.Config{BaseURL: up.URL + "/v1", APIKey: "k", Model: "gpt-test", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, options{model: m})
	tool := map[string]any{"name": "pick_colour", "description": "Ask the user to pick a colour.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"palette": map[string]any{"type": "string"}}}}
	in := input("t-front", "run-1", userMsg("u1", "Pick a colour"))
	in["tools"] = []any{tool}
	in["protocolVersion"] = "1.0.0" // outcome.pendingToolCallIds is AG-UI 1.0's
	evs := e.aguiRun(alice, in)
	end := evs[len(evs)-1]
	outcome, _ := end.Data["outcome"].(map[string]any)
	if outcome["type"] != "success" || !reflect.DeepEqual(outcome["pendingToolCallIds"], []any{"call_pick"}) {
		t.Fatalf("end %v", end.Data)
	}
	if s := ofType(evs, "TOOL_CALL_START"); len(s) != 1 || s[0].Str("toolCallName") != "pick_colour" || len(ofType(evs, "TOOL_CALL_RESULT")) != 0 {
		t.Fatalf("events %v", evTypes(evs))
	}
	offered := fmt.Sprint(up.Requests()[0].Body["tools"])
	if !strings.Contains(offered, "pick_colour") || !strings.Contains(offered, "get_current_time") {
		t.Fatalf("tools offered %s", offered)
	}
	// Tool messages answering nothing are refused.
	bad := input("t-front", "run-x", map[string]any{"id": "tm0", "role": "tool", "toolCallId": "call_other", "content": "x"})
	e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: bad}, 422, "no_pending_tool_call")

	next := input("t-front", "run-2", userMsg("u1", "Pick a colour"),
		map[string]any{"id": "a1", "role": "assistant", "toolCalls": []any{map[string]any{"id": "call_pick", "type": "function",
			"function": map[string]any{"name": "pick_colour", "arguments": `{"palette":"warm"}`}}}},
		map[string]any{"id": "tm1", "role": "tool", "toolCallId": "call_pick", "content": "red"})
	next["tools"] = []any{tool}
	evs = e.aguiRun(alice, next)
	if textOf(evs) != "You picked red." || evs[0].Str("runId") != "run-2" || evs[len(evs)-1].Data["outcome"] != nil {
		t.Fatalf("continuation %v %q", evTypes(evs), textOf(evs))
	}
	sent := up.Requests()[1].Body["messages"].([]any)
	lastMsg := sent[len(sent)-1].(map[string]any)
	if lastMsg["role"] != "tool" || lastMsg["tool_call_id"] != "call_pick" || lastMsg["content"] != "red" {
		t.Fatalf("the model got %v", lastMsg)
	}
	if rf := up.Requests()[1].Body["response_format"]; fmt.Sprint(rf) != "map[type:json_object]" {
		t.Fatalf("structured answers use JSON mode: %v", rf)
	}
	msgs := e.call(req{method: "GET", path: "/v1/conversations/" + e.threadConversation(alice, "t-front") + "/messages", token: alice}, 200)["messages"].([]any)
	tm := msgs[2].(map[string]any)
	if meta := tm["metadata"].(map[string]any); tm["role"] != "tool" || meta["tool_name"] != "pick_colour" || meta["tool_call_id"] != "call_pick" ||
		meta["result"] != "red" || meta["tool_agent_output"] != "red" || meta["error"] != nil {
		t.Fatalf("stored tool message %v", tm)
	}
}

// An image part reaches the model and is stored as a part.
func TestAGUIImageInput(t *testing.T) {
	t.Parallel()
	up := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply("A cat.")}})
	m, err := openai.New(openai.Config{BaseURL: up.URL + "/v1", APIKey: "k", Model: "gpt-test", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, options{model: m})
	e.aguiRun(alice, input("t-img", "run-1", map[string]any{"id": "u1", "role": "user", "content": []any{
		map[string]any{"type": "text", "text": "What is this?"},
		map[string]any{"type": "image", "source": map[string]any{"type": "url", "value": "https://example.com/cat.png", "mimeType": "image/png"}},
	}}))
	if sent := fmt.Sprint(up.Requests()[0].Body["messages"]); !strings.Contains(sent, "https://example.com/cat.png") || !strings.Contains(sent, "What is this?") {
		t.Fatalf("the model got %s", sent)
	}
	msgs := e.call(req{method: "GET", path: "/v1/conversations/" + e.threadConversation(alice, "t-img") + "/messages", token: alice}, 200)["messages"].([]any)
	if u := msgs[0].(map[string]any); u["content"] != "What is this?" || !strings.Contains(fmt.Sprint(u["parts"]), "cat.png") {
		t.Fatalf("stored %v", u)
	}
	e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: input("t-img", "run-2", map[string]any{"id": "u2", "role": "user",
		"content": []any{map[string]any{"type": "audio", "source": map[string]any{"type": "url", "value": "https://x/a.mp3"}}}})}, 422, "files_disabled")
}

func TestAGUIBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	post := func(body any) req { return req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: body} }
	e.apiError(post("{"), 400, "invalid_json")
	e.apiError(post(map[string]any{"threadId": "t", "runId": "r", "messages": []any{}}), 422, "invalid_input")
	e.apiError(post(input("t", "r", map[string]any{"id": "a", "role": "assistant", "content": "hi"})), 422, "invalid_input")
	e.apiError(post(input("bad id!", "r", userMsg("u", "hi"))), 400, "invalid_field")
	e.apiError(post(map[string]any{"threadId": "t", "messages": "nope"}), 400, "invalid_field")
	e.apiError(post(resumeInput("t", "r", "conf", "resolved", map[string]any{"approved": true})), 404, "thread_not_found")
	e.aguiRun(alice, input("t-bad", "r1", userMsg("u1", "hi")))
	e.apiError(post(resumeInput("t-bad", "r", "nope", "resolved", map[string]any{"approved": true})), 404, "interrupt_not_found")
	e.apiError(post(map[string]any{"threadId": "t-bad", "runId": "r", "messages": []any{}, "resume": []any{map[string]any{"interruptId": "x", "status": "maybe"}}}), 422, "invalid_resume")
	e.apiError(req{method: "POST", path: "/api/v1/agent/runs", body: input("t", "r", userMsg("u", "hi"))}, 401, "unauthorized")
}

// Another tenant's (or user's) thread does not exist for them; its name is
// theirs to use for a thread of their own.
func TestAGUITenantIsolation(t *testing.T) {
	t.Parallel()
	h := newHook(t)
	e := setup(t, options{builtin: builtin.Config{Webhook: builtin.WebhookConfig{URL: h.srv.URL}}})
	_, in := interrupted(t, e, "t-alice", "run-1")
	for _, token := range []string{eve, bob} {
		e.apiError(req{method: "GET", path: "/api/v1/agent/runs/t-alice/events", token: token}, 404, "thread_not_found")
		e.apiError(req{method: "GET", path: "/api/v1/agent/history?threadId=t-alice", token: token}, 404, "thread_not_found")
		e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: token, body: resumeInput("t-alice", "r", in["id"].(string), "resolved", map[string]any{"approved": true})}, 404, "thread_not_found")
		// The name is theirs too: a run on it starts a thread of their own,
		// where alice's interrupt is unknown.
		if got := e.call(req{method: "POST", path: "/api/v1/agent/runs", token: token, body: input("t-alice", "r", userMsg("x-"+token, "hi"))}, 202); got["created"] != true {
			t.Fatalf("%s on t-alice: %v", token, got)
		}
		e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: token, body: resumeInput("t-alice", "r", in["id"].(string), "resolved", map[string]any{"approved": true})}, 404, "interrupt_not_found")
	}
	if h.calls() != 0 {
		t.Fatal("another principal's resume ran the tool")
	}
	// Alice's thread is untouched: the interrupt is still hers to answer.
	evs := e.aguiRun(alice, resumeInput("t-alice", "run-2", in["id"].(string), "resolved", map[string]any{"approved": true}))
	if evs[len(evs)-1].Type() != "RUN_FINISHED" || h.calls() != 1 {
		t.Fatalf("alice's continuation %v", evTypes(evs))
	}
}

// RunAgentInput.context reaches the model; forwardedProps.engine routes the
// run, and one the router does not know is refused before the run starts.
func TestAGUIContextAndRouting(t *testing.T) {
	t.Parallel()
	up := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply(`{"answer":"Noted."}`)}})
	m, err := openai.New(openai.Config{BaseURL: up.URL + "/v1", APIKey: "k", Model: "gpt-test", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, options{model: m})
	in := input("t-ctx", "run-1", userMsg("u1", "hi"))
	in["context"] = []any{map[string]any{"description": "the user's plan", "value": "enterprise"}}
	e.aguiRun(alice, in)
	system := up.Requests()[0].Body["messages"].([]any)[0].(map[string]any)
	if system["role"] != "system" || !strings.Contains(fmt.Sprint(system["content"]), "the user's plan: enterprise") {
		t.Fatalf("system message %v", system)
	}
	in = input("t-ctx", "run-2", userMsg("u2", "hi"))
	in["forwardedProps"] = map[string]any{"engine": "no-such-engine"}
	e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: in, header: map[string]string{"Accept": "text/event-stream"}}, 400, "invalid_field")
	in["forwardedProps"] = map[string]any{"engine": "local"}
	evs := e.aguiRun(alice, in)
	steps := ofType(evs, "STEP_STARTED")
	if end := evs[len(evs)-1]; end.Type() != "RUN_FINISHED" || len(steps) != 2 || steps[0].Str("stepName") != "router" {
		t.Fatalf("routed to local: %v", evTypes(evs))
	}
}

// An interrupt nobody answered in time can only be cancelled; cancelling it
// replays how the run ended, and the thread goes on.
func TestAGUIExpiredInterrupt(t *testing.T) {
	t.Parallel()
	e := setup(t, options{confirmTTL: 50 * time.Millisecond})
	_, in := interrupted(t, e, "t-exp", "run-1")
	rd, resp := e.aguiStream(req{method: "GET", path: "/api/v1/agent/runs/t-exp/events", token: alice})
	seed := readAGUI(t, rd, false, runEnds(2)) // the interrupt, then the expiry's end
	resp.Body.Close()
	if end := seed[len(seed)-1]; end.Type() != "RUN_ERROR" || end.Str("code") != "confirmation_expired" {
		t.Fatalf("expired run ends %v", end.Data)
	}
	id := in["id"].(string)
	e.apiError(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: resumeInput("t-exp", "run-2", id, "resolved", map[string]any{"approved": true})}, 410, "interrupt_expired")
	evs := e.aguiRun(alice, resumeInput("t-exp", "run-3", id, "cancelled", nil))
	if end := evs[len(evs)-1]; end.Type() != "RUN_ERROR" || end.Str("code") != "confirmation_expired" {
		t.Fatalf("cancelled expired interrupt replays %v", evTypes(evs))
	}
	if evs = e.aguiRun(alice, input("t-exp", "run-4", userMsg("u4", "hello again"))); evs[len(evs)-1].Type() != "RUN_FINISHED" {
		t.Fatalf("the thread did not go on: %v", evTypes(evs))
	}
}

// A structured answer cut off mid-stream keeps what it showed, prose not
// JSON, and the run ends in RUN_ERROR.
func TestAGUIStructuredAnswerCut(t *testing.T) {
	t.Parallel()
	up := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: []llmtest.Reply{{
		Text: []string{`{"key_points":["a"],`, `"answer":"Half `, `an answer`, `, and more"}`}, Fail: llmtest.FailCut, FailAfter: 4}}})
	m, err := openai.New(openai.Config{BaseURL: up.URL + "/v1", APIKey: "k", Model: "gpt-test", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, options{model: m})
	evs := e.aguiRun(alice, input("t-cut", "run-1", userMsg("u1", "go")))
	if textOf(evs) != "Half an answer" || evs[len(evs)-1].Type() != "RUN_ERROR" {
		t.Fatalf("streamed %q, events %v", textOf(evs), evTypes(evs))
	}
	msgs := e.call(req{method: "GET", path: "/v1/conversations/" + e.threadConversation(alice, "t-cut") + "/messages", token: alice}, 200)["messages"].([]any)
	if a := msgs[len(msgs)-1].(map[string]any); a["content"] != "Half an answer" {
		t.Fatalf("stored %v", a)
	}
}
