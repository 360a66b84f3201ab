package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/llm/openai"
	"github.com/agentchat/agentchat/internal/ssetest"
	"github.com/agentchat/agentchat/internal/tool/builtin"
)

const uiPath = "/v1/agent/chat?format=vercel-ai"

// uiStream is one AI SDK UI message stream response, read to its end.
type uiStream struct {
	header http.Header
	chunks []map[string]any
}

// uiChat posts a DefaultChatTransport request and reads the whole response.
func (e *env) uiChat(token string, body any) uiStream {
	e.t.Helper()
	rd, resp := e.stream(req{method: "POST", path: uiPath, token: token, body: body})
	defer resp.Body.Close()
	return readUI(e.t, rd, resp.Header)
}

// readUI reads a UI message stream to its end and checks what every response
// must do: data-only frames of JSON chunks, a first `start`, `finish` as the
// last chunk, then `data: [DONE]` as the last frame.
func readUI(t *testing.T, rd *ssetest.Reader, h http.Header) uiStream {
	t.Helper()
	out := uiStream{header: h}
	done := false
	for {
		f, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("stream broke after %d chunks: %v", len(out.chunks), err)
		}
		if f.Comment != "" || f.Data == "" && f.Retry != 0 {
			continue
		}
		if done {
			t.Fatalf("a frame after [DONE]: %q", f.Data)
		}
		if f.Event != "message" {
			t.Fatalf("frame with event %q", f.Event)
		}
		if f.Data == "[DONE]" {
			done = true
			continue
		}
		var ch map[string]any
		f.JSON(t, &ch)
		out.chunks = append(out.chunks, ch)
	}
	if !done {
		t.Fatalf("no [DONE]; chunks %v", out.types())
	}
	ts := out.types()
	if len(ts) == 0 || ts[0] != "start" || ts[len(ts)-1] != "finish" || slices.Index(ts, "finish") != len(ts)-1 {
		t.Fatalf("chunks must open with start and end with the only finish: %v", ts)
	}
	return out
}

func (s uiStream) types() []string {
	var out []string
	for _, ch := range s.chunks {
		out = append(out, ch["type"].(string))
	}
	return out
}

func (s uiStream) first(typ string) map[string]any {
	for _, ch := range s.chunks {
		if ch["type"] == typ {
			return ch
		}
	}
	return nil
}

func (s uiStream) text() string {
	var b strings.Builder
	for _, ch := range s.chunks {
		if ch["type"] == "text-delta" {
			b.WriteString(ch["delta"].(string))
		}
	}
	return b.String()
}

func (s uiStream) finishReason() string {
	r, _ := s.chunks[len(s.chunks)-1]["finishReason"].(string)
	return r
}

func userMessage(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}
}

// transportBody is what DefaultChatTransport posts.
func transportBody(chatID, trigger, messageID string, messages ...map[string]any) map[string]any {
	b := map[string]any{"id": chatID, "messages": messages, "trigger": trigger}
	if messageID != "" {
		b["messageId"] = messageID
	}
	return b
}

// approvalMessage is the assistant message as the client holds it after the
// person answered the approval request.
func approvalMessage(first uiStream, approved bool, reason string) map[string]any {
	req := first.first("tool-approval-request")
	input := first.first("tool-input-available")
	approval := map[string]any{"id": req["approvalId"], "approved": approved}
	if reason != "" {
		approval["reason"] = reason
	}
	return map[string]any{
		"id": first.chunks[0]["messageId"], "role": "assistant",
		"parts": []any{
			map[string]any{"type": "step-start"},
			map[string]any{"type": "tool-" + input["toolName"].(string), "toolCallId": req["toolCallId"], "state": "approval-responded",
				"input": input["input"], "approval": approval},
		},
	}
}

func TestVercelChat(t *testing.T) {
	t.Parallel()
	model, _ := openaiModel(t, llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply("Hello from the model.")}}, openai.Config{})
	e := setup(t, options{model: model})
	s := e.uiChat(alice, transportBody("chat-one", "submit-message", "", userMessage("u1", "hi there")))
	if s.header.Get("X-Vercel-Ai-Ui-Message-Stream") != "v1" || s.header.Get("Content-Type") != "text/event-stream" || s.header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("headers %v", s.header)
	}
	want := []string{"start", "data-conversation.created", "start-step", "text-start", "text-delta", "text-delta", "text-delta", "text-delta", "text-end", "finish-step", "finish"}
	if got := s.types(); !slices.Equal(got, want) {
		t.Fatalf("chunks\n got %v\nwant %v", got, want)
	}
	runID := s.header.Get("X-Run-ID")
	conv := s.first("data-conversation.created")["data"].(map[string]any)["conversationId"].(string)
	if s.chunks[0]["messageId"] != runID || conv != s.header.Get("X-Conversation-ID") || s.text() != "Hello from the model." || s.finishReason() != "stop" {
		t.Fatalf("start %v, conversation %s, text %q, finish %q", s.chunks[0], conv, s.text(), s.finishReason())
	}

	// The chat id keeps naming the same conversation; the stored history is the truth.
	s2 := e.uiChat(alice, transportBody("chat-one", "submit-message", "",
		userMessage("u1", "hi there"), map[string]any{"id": runID, "role": "assistant", "parts": []any{map[string]any{"type": "text", "text": "edited by the client"}}},
		userMessage("u2", "and again")))
	if s2.first("data-conversation.created") != nil || s2.header.Get("X-Conversation-ID") != conv {
		t.Fatalf("second turn %v in %s", s2.types(), s2.header.Get("X-Conversation-ID"))
	}
	msgs := e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/messages", token: alice}, 200)["messages"].([]any)
	var roles []string
	for _, m := range msgs {
		m := m.(map[string]any)
		roles = append(roles, m["role"].(string)+":"+m["content"].(string))
	}
	if want := []string{"user:hi there", "assistant:Hello from the model.", "user:and again", "assistant:Hello from the model."}; !slices.Equal(roles, want) {
		t.Fatalf("stored %v", roles)
	}

	// Another user, or tenant, using the same chat id gets a conversation of its own.
	for _, token := range []string{bob, eve} {
		other := e.uiChat(token, transportBody("chat-one", "submit-message", "", userMessage("x", "mine")))
		if id := other.header.Get("X-Conversation-ID"); id == conv || other.first("data-conversation.created") == nil {
			t.Fatalf("%s got conversation %s (alice's is %s)", token, id, conv)
		}
	}
	e.apiError(req{method: "GET", path: "/v1/conversations/" + conv, token: bob}, 404, "conversation_not_found")

	// The native body works too, and a conversation id must be the principal's.
	native := e.uiChat(alice, map[string]any{"conversationId": conv, "input": "native body"})
	if native.header.Get("X-Conversation-ID") != conv {
		t.Fatalf("native body went to %s", native.header.Get("X-Conversation-ID"))
	}
	e.apiError(req{method: "POST", path: uiPath, token: eve, body: map[string]any{"conversationId": conv, "input": "x"}}, 404, "conversation_not_found")
	e.apiError(req{method: "POST", path: uiPath, token: alice, body: transportBody("bad id!", "submit-message", "", userMessage("u", "x"))}, 400, "invalid_field")
	e.apiError(req{method: "POST", path: uiPath, token: alice, body: transportBody("c2", "submit-message", "")}, 422, "invalid_input")
	e.apiError(req{method: "POST", path: uiPath, token: alice, body: transportBody("c2", "resume", "", userMessage("u", "x"))}, 422, "invalid_field")
	e.apiError(req{method: "POST", path: uiPath, token: alice, body: `{"id":`}, 400, "invalid_json")
	e.apiError(req{method: "POST", path: "/v1/agent/chat?format=nope", token: alice, body: map[string]any{"input": "x"}}, 400, "unsupported_format")
}

// approvalRoundTrip is the client script of a confirmation through the UI
// message stream: the request pauses at an approval request, and the
// decision in the assistant message's tool part continues the same message.
// It runs the same against every engine.
func approvalRoundTrip(t *testing.T, e *env, chatID string, approve bool) (first, second uiStream) {
	t.Helper()
	user := userMessage("u1", `Send a Feishu message saying "deploy done"`)
	first = e.uiChat(alice, transportBody(chatID, "submit-message", "", user))
	ts := first.types()
	tail := []string{"tool-input-available", "tool-approval-request", "data-tool.awaiting_input", "finish-step", "finish"}
	if len(ts) < len(tail) || !slices.Equal(ts[len(ts)-len(tail):], tail) || first.finishReason() != "tool-calls" {
		t.Fatalf("first response %v (finish %q)", ts, first.finishReason())
	}
	ar := first.first("tool-approval-request")
	aw := first.first("data-tool.awaiting_input")["data"].(map[string]any)
	input := first.first("tool-input-available")
	if ar["approvalId"] == "" || aw["confirmationId"] != ar["approvalId"] || aw["toolCallId"] != ar["toolCallId"] ||
		input["toolName"] != "send_feishu_message" || input["input"].(map[string]any)["text"] != "deploy done" {
		t.Fatalf("approval %v, awaiting %v, input %v", ar, aw, input)
	}
	if conv := first.first("data-conversation.created"); conv == nil || conv["data"].(map[string]any)["conversationId"] != first.header.Get("X-Conversation-ID") {
		t.Fatalf("conversation.created %v", conv)
	}
	messageID := first.chunks[0]["messageId"].(string)
	assistant := approvalMessage(first, approve, "not now")
	second = e.uiChat(alice, transportBody(chatID, "submit-message", messageID, user, assistant))
	if second.chunks[0]["messageId"] != messageID || second.finishReason() != "stop" || second.first("data-conversation.created") != nil {
		t.Fatalf("continuation %v starts %v", second.types(), second.chunks[0])
	}
	call := ar["toolCallId"]
	out := second.first("tool-output-available")
	denied := second.first("tool-output-denied")
	switch {
	case approve && (out == nil || out["toolCallId"] != call || out["output"] == nil):
		t.Fatalf("approved call has no output: %v", second.types())
	case !approve && (denied == nil || denied["toolCallId"] != call):
		t.Fatalf("denied call not denied: %v", second.types())
	}
	if second.text() == "" {
		t.Fatalf("no answer after the decision: %v", second.types())
	}
	return first, second
}

func TestVercelApproval(t *testing.T) {
	t.Parallel()
	hook := newFeishu(t)
	e := setup(t, options{builtin: builtin.Config{Feishu: builtin.FeishuConfig{WebhookURL: hook.srv.URL}}})

	first, second := approvalRoundTrip(t, e, "approve-chat", true)
	if got := hook.texts(); len(got) != 1 || got[0] != "deploy done" {
		t.Fatalf("webhook got %v", got)
	}
	if !strings.Contains(second.text(), "sent") {
		t.Fatalf("answer %q", second.text())
	}
	// The client repeating its request changes nothing and streams the same continuation.
	user := userMessage("u1", `Send a Feishu message saying "deploy done"`)
	again := e.uiChat(alice, transportBody("approve-chat", "submit-message", first.chunks[0]["messageId"].(string), user, approvalMessage(first, true, "")))
	if again.text() != second.text() || len(hook.texts()) != 1 {
		t.Fatalf("repeat streamed %q, webhook %v", again.text(), hook.texts())
	}
	// A different decision now is a conflict.
	e.apiError(req{method: "POST", path: uiPath, token: alice, body: transportBody("approve-chat", "submit-message", "", user, approvalMessage(first, false, ""))},
		409, "confirmation_already_decided")
	// Nobody else can decide it.
	e.apiError(req{method: "POST", path: uiPath, token: bob, body: transportBody("approve-chat", "submit-message", "", user, approvalMessage(first, true, ""))},
		422, "invalid_input")
	// An answered part that carries no approval answers nothing.
	bare := map[string]any{"id": "a-bare", "role": "assistant", "parts": []any{
		map[string]any{"type": "tool-feishu_send", "toolCallId": "c-bare", "state": "approval-responded"}}}
	e.apiError(req{method: "POST", path: uiPath, token: alice, body: transportBody("approve-chat", "submit-message", "", user, bare)},
		422, "invalid_field")

	_, denied := approvalRoundTrip(t, e, "deny-chat", false)
	if !strings.Contains(denied.text(), "did not send") || len(hook.texts()) != 1 {
		t.Fatalf("denied answer %q, webhook %v", denied.text(), hook.texts())
	}
}

func TestVercelErrorTurn(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	s := e.uiChat(alice, transportBody("err-chat", "submit-message", "", userMessage("u1", "fail please")))
	errCh := s.first("error")
	if errCh == nil || !strings.Contains(errCh["errorText"].(string), "unavailable") || s.finishReason() != "error" {
		t.Fatalf("error turn %v: %v", s.types(), errCh)
	}
	if i := slices.Index(s.types(), "error"); i > slices.Index(s.types(), "finish") {
		t.Fatalf("error after finish: %v", s.types())
	}
}

// gate is a model that streams its first words, then waits until released.
type gate struct {
	release chan struct{}
	once    sync.Once
	started chan struct{}
}

func newGate() *gate { return &gate{release: make(chan struct{}), started: make(chan struct{})} }

func (g *gate) Name() string { return "gate" }

func (g *gate) Stream(ctx context.Context, _ llm.Request) (llm.Stream, error) {
	return &gateStream{g: g, ctx: ctx, words: []string{"Hello", " from", " behind", " the", " gate."}}, nil
}

type gateStream struct {
	g     *gate
	ctx   context.Context
	words []string
	i     int
	cur   llm.Chunk
	err   error
}

func (s *gateStream) Next() bool {
	if s.i == 2 {
		s.g.once.Do(func() { close(s.g.started) })
		select {
		case <-s.g.release:
		case <-s.ctx.Done():
			s.err = s.ctx.Err()
			return false
		}
	}
	if s.i >= len(s.words) {
		if s.i == len(s.words) {
			s.i++
			s.cur = llm.Chunk{FinishReason: "stop"}
			return true
		}
		return false
	}
	s.cur = llm.Chunk{Text: s.words[s.i]}
	s.i++
	return true
}

func (s *gateStream) Chunk() llm.Chunk { return s.cur }
func (s *gateStream) Err() error       { return s.err }
func (s *gateStream) Close() error     { return nil }

func TestVercelResume(t *testing.T) {
	t.Parallel()
	g := newGate()
	e := setup(t, options{model: g})
	resume := func(chatID, token string) *http.Response {
		t.Helper()
		return e.send(req{method: "GET", path: "/v1/agent/chat/" + chatID + "/stream?format=vercel-ai", token: token})
	}
	if resp := resume("never-used", alice); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("unknown chat: %d", resp.StatusCode)
	}

	// The first connection drops mid-answer; the run goes on.
	rd, resp := e.stream(req{method: "POST", path: uiPath, token: alice, body: transportBody("resume-chat", "submit-message", "", userMessage("u1", "tell me"))})
	runID := resp.Header.Get("X-Run-ID")
	for {
		f, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(f.Data, `"text-delta"`) {
			break
		}
	}
	resp.Body.Close()
	<-g.started

	// Another user's resume of the same chat id finds nothing.
	if other := resume("resume-chat", bob); other.StatusCode != http.StatusNoContent {
		t.Fatalf("bob resumed alice's chat: %d", other.StatusCode)
	}
	// A reload resumes the whole response from its start, then live.
	rresp := resume("resume-chat", alice)
	if rresp.StatusCode != http.StatusOK || rresp.Header.Get("X-Vercel-Ai-Ui-Message-Stream") != "v1" {
		t.Fatalf("resume: %d %v", rresp.StatusCode, rresp.Header)
	}
	rrd := ssetest.NewReader(rresp.Body)
	close(g.release)
	s := readUI(t, rrd, rresp.Header)
	rresp.Body.Close()
	if s.chunks[0]["messageId"] != runID || s.text() != "Hello from behind the gate." || s.finishReason() != "stop" {
		t.Fatalf("resumed %v: %q", s.types(), s.text())
	}
	if s.first("data-conversation.created") == nil {
		t.Fatalf("the resumed response does not start at the start: %v", s.types())
	}
	// The run has ended: nothing to resume.
	if resp := resume("resume-chat", alice); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("resume after the end: %d", resp.StatusCode)
	}
	e.apiError(req{method: "GET", path: "/v1/agent/chat/resume-chat/stream?format=native", token: alice}, 400, "unsupported_format")
}

// A run paused for a person is resumed up to its approval request.
func TestVercelResumeAwaiting(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	first := e.uiChat(alice, transportBody("await-chat", "submit-message", "", userMessage("u1", `send a feishu message saying "x"`)))
	resp := e.send(req{method: "GET", path: "/v1/agent/chat/await-chat/stream?format=vercel-ai", token: alice})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: %d", resp.StatusCode)
	}
	s := readUI(t, ssetest.NewReader(resp.Body), resp.Header)
	if !slices.Equal(s.types(), first.types()) || s.finishReason() != "tool-calls" {
		t.Fatalf("resumed\n%v\nfirst\n%v", s.types(), first.types())
	}
}

func TestVercelRegenerate(t *testing.T) {
	t.Parallel()
	model, up := numberedModel(t)
	e := setup(t, options{model: model})
	user := userMessage("u1", "pick a number")
	first := e.uiChat(alice, transportBody("regen-chat", "submit-message", "", user))
	old := first.chunks[0]["messageId"].(string)
	conv := first.header.Get("X-Conversation-ID")

	// The client drops the answer and asks again for the same user message.
	again := e.uiChat(alice, transportBody("regen-chat", "regenerate-message", old, user))
	if again.chunks[0]["messageId"] == old || again.text() != "Answer 2." {
		t.Fatalf("regenerated %v: %q", again.chunks[0], again.text())
	}
	// The old answer is kept in the tree, a sibling of the new one; the
	// history shows the new one.
	if got := contentsOf(e.treeMessages(alice, conv, false)); got != "pick a number|Answer 2." {
		t.Fatalf("active branch %q", got)
	}
	all := e.treeMessages(alice, conv, true)
	if contentsOf(all) != "pick a number|Answer 1.|Answer 2." || all[1]["parentId"] != all[0]["id"] || all[2]["parentId"] != all[0]["id"] {
		t.Fatalf("tree %v", all)
	}
	// The model did not see the replaced answer, then or later.
	e.uiChat(alice, transportBody("regen-chat", "submit-message", "", user, userMessage("u2", "why?")))
	reqs := up.Requests()
	contents := func(r llmtest.Request) string {
		var out []string
		for _, m := range r.Body["messages"].([]any) {
			out = append(out, fmt.Sprint(m.(map[string]any)["content"]))
		}
		return strings.Join(out, "|")
	}
	if got := contents(reqs[1]); got != "pick a number" {
		t.Fatalf("regenerating context %q", got)
	}
	if got := contents(reqs[2]); got != "pick a number|Answer 2.|why?" {
		t.Fatalf("later context %q", got)
	}
	e.apiError(req{method: "POST", path: uiPath, token: alice, body: transportBody("regen-chat", "regenerate-message", "no-such-message", user)}, 404, "message_not_found")
}

// The observable stream of seed 002: several iterations of one turn, each
// tool_result naming its tool_call, every event with the turn's turn_id.
func TestConversationFormat(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat?format=conversation", token: alice, body: map[string]any{"input": "what time is it in Tokyo?"}})
	defer resp.Body.Close()
	var names []string
	turns := map[string]bool{}
	calls := map[string]string{}
	for {
		f, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if f.Comment != "" || f.Data == "" {
			continue
		}
		var d map[string]any
		f.JSON(t, &d)
		if d["type"] != f.Event {
			t.Fatalf("frame %s carries type %v", f.Event, d["type"])
		}
		names = append(names, f.Event)
		turns[fmt.Sprint(d["turn_id"])] = true
		switch f.Event {
		case "tool_call":
			calls[d["tool_call_id"].(string)] = d["tool_name"].(string)
		case "tool_result":
			if calls[d["tool_call_id"].(string)] != d["tool_name"] {
				t.Fatalf("tool_result %v without its tool_call %v", d, calls)
			}
		case "done":
			if d["status"] != "succeeded" || d["iterations"] != float64(2) {
				t.Fatalf("done %v", d)
			}
		}
	}
	got := strings.Join(slices.Compact(names), ",")
	if got != "iteration_start,tool_call,tool_result,iteration_start,text,done" || len(turns) != 1 || turns[""] || turns["<nil>"] {
		t.Fatalf("events %s, turns %v", got, turns)
	}
}

func TestChatEngineField(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hi", "engine": "nope"}}, 400, "invalid_field")
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hi", "engine": "Bad Engine"}}, 400, "invalid_field")
	raw, _ := json.Marshal(map[string]any{"input": "hi", "engine": "local"})
	if frames := e.chat(alice, string(raw)); last(frames).Data["status"] != "succeeded" {
		t.Fatalf("local engine: %v", last(frames).Data)
	}
}

// Two calls wait in one step: the response ends once both ask for approval;
// decisions may come together or one at a time, and a reload in between
// shows what still waits.
func TestVercelTwoApprovals(t *testing.T) {
	t.Parallel()
	hook := newFeishu(t)
	e := setup(t, options{builtin: builtin.Config{
		Feishu:  builtin.FeishuConfig{WebhookURL: hook.srv.URL},
		Webhook: builtin.WebhookConfig{URL: hook.srv.URL},
	}})
	user := userMessage("u1", `Send a Feishu message saying "hello" and send a webhook saying "hello"`)
	requested := func(s uiStream) []map[string]any {
		var out []map[string]any
		for _, ch := range s.chunks {
			if ch["type"] == "tool-approval-request" {
				out = append(out, ch)
			}
		}
		return out
	}
	// message is the assistant message with the given decisions by call id (nil: still asked).
	message := func(first uiStream, decided map[string]*bool) map[string]any {
		var parts []any
		for _, ar := range requested(first) {
			call := ar["toolCallId"].(string)
			part := map[string]any{"type": "dynamic-tool", "toolName": "x", "toolCallId": call, "input": map[string]any{},
				"state": "approval-requested", "approval": map[string]any{"id": ar["approvalId"]}}
			if d := decided[call]; d != nil {
				part["state"] = "approval-responded"
				part["approval"] = map[string]any{"id": ar["approvalId"], "approved": *d}
			}
			parts = append(parts, part)
		}
		return map[string]any{"id": first.chunks[0]["messageId"], "role": "assistant", "parts": parts}
	}
	yes, no := true, false

	for _, together := range []bool{true, false} {
		chatID := fmt.Sprintf("two-%v", together)
		first := e.uiChat(alice, transportBody(chatID, "submit-message", "", user))
		asks := requested(first)
		if len(asks) != 2 || first.finishReason() != "tool-calls" {
			t.Fatalf("first response %v", first.types())
		}
		c1, c2 := asks[0]["toolCallId"].(string), asks[1]["toolCallId"].(string)
		msgID := first.chunks[0]["messageId"].(string)
		if together {
			s := e.uiChat(alice, transportBody(chatID, "submit-message", msgID, user, message(first, map[string]*bool{c1: &yes, c2: &no})))
			if s.first("tool-output-available")["toolCallId"] != c1 || s.first("tool-output-denied")["toolCallId"] != c2 || s.finishReason() != "stop" {
				t.Fatalf("both decided: %v", s.types())
			}
			continue
		}
		// One decision: the response ends when the run waits for the other.
		s := e.uiChat(alice, transportBody(chatID, "submit-message", msgID, user, message(first, map[string]*bool{c1: &yes})))
		if s.first("tool-output-available")["toolCallId"] != c1 || s.finishReason() != "tool-calls" || s.text() != "" {
			t.Fatalf("one decided: %v", s.types())
		}
		// A reload now replays the message up to what still waits.
		resp := e.send(req{method: "GET", path: "/v1/agent/chat/" + chatID + "/stream?format=vercel-ai", token: alice})
		replay := readUI(t, ssetest.NewReader(resp.Body), resp.Header)
		resp.Body.Close()
		if replay.finishReason() != "tool-calls" || replay.first("tool-output-available") == nil || len(requested(replay)) != 2 {
			t.Fatalf("replay %v", replay.types())
		}
		s = e.uiChat(alice, transportBody(chatID, "submit-message", msgID, user, message(first, map[string]*bool{c1: &yes, c2: &yes})))
		if s.chunks[0]["messageId"] != msgID || s.finishReason() != "stop" || s.text() == "" {
			t.Fatalf("second decision: %v", s.types())
		}
		var outputs []string
		for _, ch := range s.chunks {
			if ch["type"] == "tool-output-available" {
				outputs = append(outputs, ch["toolCallId"].(string))
			}
		}
		if !slices.Contains(outputs, c2) {
			t.Fatalf("no output for the second call: %v", s.types())
		}
	}
}

func TestVercelSDK5(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	rd, resp := e.stream(req{method: "POST", path: uiPath + "&sdk=5", token: alice,
		body: transportBody("sdk5", "submit-message", "", userMessage("u1", `send a feishu message saying "x"`))})
	defer resp.Body.Close()
	s := readUI(t, rd, resp.Header)
	if s.first("tool-approval-request") != nil || s.first("data-tool.awaiting_input") == nil {
		t.Fatalf("sdk 5 chunks %v", s.types())
	}
	if _, ok := s.chunks[len(s.chunks)-1]["finishReason"]; ok {
		t.Fatalf("finishReason sent to AI SDK 5: %v", s.chunks[len(s.chunks)-1])
	}
}

// Editing an earlier user message (submit-message with its messageId) replaces
// the exchange from that message on; the replaced answers stay stored.
func TestVercelEdit(t *testing.T) {
	t.Parallel()
	model, up := numberedModel(t)
	e := setup(t, options{model: model})
	u1, u2 := userMessage("u1", "first"), userMessage("u2", "second")
	a1 := e.uiChat(alice, transportBody("edit-chat", "submit-message", "", u1))
	assistant1 := map[string]any{"id": a1.chunks[0]["messageId"], "role": "assistant", "parts": []any{map[string]any{"type": "text", "text": a1.text()}}}
	e.uiChat(alice, transportBody("edit-chat", "submit-message", "", u1, assistant1, u2))

	// Edit the second message: the first exchange stays in the context.
	e.uiChat(alice, transportBody("edit-chat", "submit-message", "u2", u1, assistant1, userMessage("u2", "second, edited")))
	// Edit the first message: nothing before it stays.
	e.uiChat(alice, transportBody("edit-chat", "submit-message", "u1", userMessage("u1", "first, edited")))
	// A new turn after the edit sees the edited exchange only.
	s := e.uiChat(alice, transportBody("edit-chat", "submit-message", "", userMessage("u1", "first, edited"), userMessage("u3", "third")))

	reqs := up.Requests()
	contents := func(r llmtest.Request) string {
		var out []string
		for _, m := range r.Body["messages"].([]any) {
			out = append(out, fmt.Sprint(m.(map[string]any)["content"]))
		}
		return strings.Join(out, "|")
	}
	want := []string{"first", "first|Answer 1.|second", "first|Answer 1.|second, edited", "first, edited", "first, edited|Answer 4.|third"}
	for i, w := range want {
		if got := contents(reqs[i]); got != w {
			t.Errorf("request %d context %q, want %q", i, got, w)
		}
	}
	conv := s.header.Get("X-Conversation-ID")
	if msgs := e.treeMessages(alice, conv, true); len(msgs) != 10 {
		t.Fatalf("every version is kept: %d messages", len(msgs))
	}
	active := e.treeMessages(alice, conv, false)
	if got := contentsOf(active); got != "first, edited|Answer 4.|third|Answer 5." {
		t.Fatalf("active branch %q", got)
	}
	// The edited first message is the second version of the first.
	if sib := stringsOf(active[0]["siblingIds"]); len(sib) != 2 || sib[1] != active[0]["id"] || active[0]["parentId"] != nil {
		t.Fatalf("edited message %v", active[0])
	}
}
