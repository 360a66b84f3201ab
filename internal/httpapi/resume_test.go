package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/ssetest"
	"github.com/agentchat/agentchat/internal/tool/builtin"
)

// everyInput makes the scripted model think, then call the calculator
// (which runs) and send_webhook (which waits for a person) in one turn, and
// answer in text once the webhook is approved: reasoning, tool calls, a
// confirmation and text in one run.
const everyInput = `Think first, then calculate (3+4)*5 and send a webhook saying "deploy done"`

// resumeCase is one wire format's streams: play runs the scripted run and
// returns the frames a client that never dropped saw; resume reconnects
// after one of them as a client that has it and what came before.
type resumeCase struct {
	name string
	play func(e *env) (full []ssetest.Frame, resume func(id string, byQuery bool) []ssetest.Frame)
	// open: the resumed stream does not end by itself (it follows a
	// thread), so it is read up to full's last frame, and a client that
	// has that frame is not tried (it would wait for more).
	open bool
	// paused: the stream is the response that ends when the run pauses;
	// the webhook is never approved.
	paused bool
}

// TestResumeAfterEveryFrame: in every wire format a client resumes by
// Last-Event-ID, a run with reasoning, two tool calls, a confirmation and
// text is streamed whole; then, for every frame k (and the start), a client
// that has frames 1..k reconnects with frame k's id (every other time as
// ?after=) and gets exactly frames k+1..: frames 1..k plus the resumed
// stream are the uninterrupted stream, no gap and no repeat. The cut between
// two frames of one canonical event (native's tool.state awaiting_input and
// tool.awaiting_input, AG-UI's TEXT_MESSAGE_START and its first CONTENT, the
// AI SDK's tool-approval-request and its data part, the tail that ends its
// paused response) is one of them.
func TestResumeAfterEveryFrame(t *testing.T) {
	t.Parallel()
	cases := []resumeCase{
		{name: "native run", play: playNative("run")},
		{name: "native conversation", play: playNative("conversation"), open: true},
		{name: "conversation format", play: playObservable},
		{name: "agui thread", play: playAGUI, open: true},
		{name: "vercel-ai", play: playVercel, paused: true},
		{name: "chain", play: playChain},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHook(t)
			o := options{builtin: builtin.Config{Webhook: builtin.WebhookConfig{URL: h.srv.URL}}}
			var e *env
			if tc.name == "chain" {
				e = chainSetup(t, o)
			} else {
				e = setup(t, o)
			}
			full, resume := tc.play(e)
			if want := map[bool]int{true: 0, false: 1}[tc.paused]; h.calls() != want {
				t.Fatalf("the webhook ran %d times, want %d", h.calls(), want)
			}
			last := len(full)
			if tc.open {
				last-- // nothing follows the last frame yet: the stream would wait
			}
			for k := 0; k <= last; k++ {
				id := "" // k == 0: a client that has nothing, from the start
				if k > 0 {
					id = full[k-1].ID
				}
				got := resume(id, k%2 == 1)
				if d := diffStreams(full[k:], got); d != "" {
					t.Fatalf("resumed after frame %d (id %q): %s", k, id, d)
				}
			}
		})
	}
}

// readPositioned reads frames until the stream ends or stop says so after a
// frame, leaving out what is no position in the stream: comments, retry
// hints and native pings. Every frame it returns must carry an id.
func readPositioned(t *testing.T, rd *ssetest.Reader, stop func(ssetest.Frame) bool) []ssetest.Frame {
	t.Helper()
	var out []ssetest.Frame
	for {
		f, err := rd.Next()
		if err == io.EOF && stop == nil {
			return out
		}
		if err != nil {
			t.Fatalf("stream broke after %d frames: %v", len(out), err)
		}
		if f.Comment != "" || f.Retry != 0 && f.Data == "" || f.Event == "ping" {
			continue
		}
		if !f.HasID {
			t.Fatalf("frame %d has no id: %s %s", len(out), f.Event, f.Data)
		}
		out = append(out, f)
		if stop != nil && stop(f) {
			return out
		}
	}
}

// open starts a streaming request, bounded so that a hang fails the test;
// nil when the server answers 204 (nothing more to stream).
func (e *env) open(r req) *ssetest.Reader {
	e.t.Helper()
	resp := e.send(r)
	if resp.StatusCode == http.StatusNoContent {
		resp.Body.Close()
		return nil
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e.t.Fatalf("%s %s: %d %s", r.method, r.path, resp.StatusCode, raw)
	}
	timer := time.AfterFunc(streamBound, func() { resp.Body.Close() })
	e.t.Cleanup(func() {
		timer.Stop()
		resp.Body.Close()
	})
	return ssetest.NewReader(resp.Body)
}

// resumeReq is a GET of path as a client resuming after id: the
// Last-Event-ID header, or ?after= when byQuery.
func resumeReq(path, id string, byQuery bool) req {
	r := req{method: "GET", path: path, token: alice, header: map[string]string{}}
	switch {
	case id == "":
	case byQuery:
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		r.path += sep + "after=" + url.QueryEscape(id)
	default:
		r.header["Last-Event-ID"] = id
	}
	return r
}

// untilID stops at the frame with this id.
func untilID(id string) func(ssetest.Frame) bool {
	return func(f ssetest.Frame) bool { return f.ID == id }
}

// awaitConfirmation reads the run's native stream up to its
// tool.awaiting_input and approves that confirmation.
func (e *env) awaitConfirmation(runID string) {
	e.t.Helper()
	rd := e.open(req{method: "GET", path: "/v1/agent/runs/" + runID + "/events", token: alice})
	frames := readPositioned(e.t, rd, func(f ssetest.Frame) bool { return f.Event == "tool.awaiting_input" })
	var env struct {
		Data struct {
			ConfirmationID string `json:"confirmationId"`
			Name           string `json:"name"`
		} `json:"data"`
	}
	frames[len(frames)-1].JSON(e.t, &env)
	if env.Data.Name != "send_webhook" || env.Data.ConfirmationID == "" {
		e.t.Fatalf("awaiting %s", frames[len(frames)-1].Data)
	}
	e.call(req{method: "POST", path: "/v1/agent/confirmations/" + env.Data.ConfirmationID, token: alice, body: map[string]any{"decision": "approve"}}, 200)
}

// playNative: the native chat stream, open through the confirmation,
// resumed on the run's stream or the conversation's.
func playNative(on string) func(e *env) ([]ssetest.Frame, func(string, bool) []ssetest.Frame) {
	return func(e *env) ([]ssetest.Frame, func(string, bool) []ssetest.Frame) {
		rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": everyInput}})
		runID, conv := resp.Header.Get("X-Run-ID"), resp.Header.Get("X-Conversation-ID")
		full := readPositioned(e.t, rd, func(f ssetest.Frame) bool { return f.Event == "tool.awaiting_input" })
		e.awaitConfirmation(runID)
		full = append(full, readPositioned(e.t, rd, nil)...)
		mustHave(e.t, full, "agent.reasoning", "tool.state", "tool.awaiting_input", "agent.delta", "agent.end")
		path := "/v1/agent/runs/" + runID + "/events"
		var stop func(ssetest.Frame) bool
		if on == "conversation" {
			path, stop = "/v1/conversations/"+conv+"/events", untilID(full[len(full)-1].ID)
		}
		return full, func(id string, byQuery bool) []ssetest.Frame {
			return readPositioned(e.t, e.open(resumeReq(path, id, byQuery)), stop)
		}
	}
}

// playObservable: seed 002's stream of the chat endpoint, resumed on the
// run's stream in the same format.
func playObservable(e *env) ([]ssetest.Frame, func(string, bool) []ssetest.Frame) {
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat?format=conversation", token: alice, body: map[string]any{"input": everyInput}})
	runID := resp.Header.Get("X-Run-ID")
	e.awaitConfirmation(runID)
	full := readPositioned(e.t, rd, nil)
	mustHave(e.t, full, "iteration_start", "tool_call", "tool_result", "text", "done")
	path := "/v1/agent/runs/" + runID + "/events?format=conversation"
	return full, func(id string, byQuery bool) []ssetest.Frame {
		return readPositioned(e.t, e.open(resumeReq(path, id, byQuery)), nil)
	}
}

// playAGUI: seed 001's flow. The run is started (202) and its thread's
// stream (seed 004) followed through the interrupt and the continuation.
func playAGUI(e *env) ([]ssetest.Frame, func(string, bool) []ssetest.Frame) {
	acc := e.call(req{method: "POST", path: "/api/v1/agent/runs", token: alice,
		body: input("t-every", "run-1", userMsg("u1", everyInput))}, 202)
	path := "/api/v1/agent/runs/t-every/events"
	rd := e.open(req{method: "GET", path: path, token: alice})
	full := readPositioned(e.t, rd, func(f ssetest.Frame) bool { return f.Event == "RUN_FINISHED" })
	e.awaitConfirmation(acc["taskId"].(string))
	full = append(full, readPositioned(e.t, rd, func(f ssetest.Frame) bool { return f.Event == "RUN_FINISHED" })...)
	mustHave(e.t, full, "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "RUN_FINISHED")
	stop := untilID(full[len(full)-1].ID)
	return full, func(id string, byQuery bool) []ssetest.Frame {
		return readPositioned(e.t, e.open(resumeReq(path, id, byQuery)), stop)
	}
}

// playVercel: the AI SDK chat response, which ends when the run pauses for
// the webhook's approval (its continuation is the next request's response),
// resumed on the chat's stream endpoint while the run waits.
func playVercel(e *env) ([]ssetest.Frame, func(string, bool) []ssetest.Frame) {
	body := map[string]any{"id": "chat-every", "trigger": "submit-message", "messages": []any{
		map[string]any{"id": "m1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": everyInput}}}}}
	rd, _ := e.stream(req{method: "POST", path: uiPath, token: alice, body: body})
	full := readPositioned(e.t, rd, nil)
	mustHave(e.t, full, "reasoning-delta", "tool-input-available", "tool-output-available", "tool-approval-request", "data-tool.awaiting_input", "finish", "[DONE]")
	path := "/v1/agent/chat/chat-every/stream?format=vercel-ai"
	return full, func(id string, byQuery bool) []ssetest.Frame {
		rd := e.open(resumeReq(path, id, byQuery))
		if rd == nil {
			e.t.Fatalf("resume after %q: 204, the run is not active", id)
		}
		return readPositioned(e.t, rd, nil)
	}
}

// playChain: seed 003's chain stream, open through the confirmation,
// resumed by Last-Event-ID on the same URL (EventSource's reconnect) and by
// ?run_id=.
func playChain(e *env) ([]ssetest.Frame, func(string, bool) []ssetest.Frame) {
	path := chainPath(everyInput, 0)
	resp := e.send(req{method: "GET", path: path, token: alice})
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("chain: %d", resp.StatusCode)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	rd := ssetest.NewReader(resp.Body)
	runID := resp.Header.Get("X-Run-ID")
	full := readPositioned(e.t, rd, func(f ssetest.Frame) bool {
		return f.Event == "call.start" && strings.Contains(f.Data, `"status":"awaiting_input"`)
	})
	e.awaitConfirmation(runID)
	full = append(full, readPositioned(e.t, rd, nil)...)
	mustHave(e.t, full, "chain.step", "planner.plan", "call.start", "call.end", "final")
	byRun := "/v1/chain/stream?run_id=" + runID
	return full, func(id string, byQuery bool) []ssetest.Frame {
		p := path
		if byQuery {
			p = byRun // ?after= beside run_id: the chain this client named
		}
		if id == "" && !byQuery {
			p = byRun // the same URL without an id starts a new chain
		}
		rd := e.open(resumeReq(p, id, byQuery))
		if rd == nil {
			return nil // 204: the client has every frame
		}
		return readPositioned(e.t, rd, nil)
	}
}

// mustHave fails unless the stream has a frame of each kind: a native or
// chain event name, an AG-UI type, an AI SDK chunk type, or "[DONE]".
func mustHave(t *testing.T, frames []ssetest.Frame, kinds ...string) {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range frames {
		seen[f.Event] = true
		if f.Data == "[DONE]" {
			seen["[DONE]"] = true
		}
		var ch struct {
			Type string `json:"type"`
		}
		if f.Event == "message" && f.Data != "[DONE]" {
			f.JSON(t, &ch)
			seen[ch.Type] = true
		}
	}
	for _, k := range kinds {
		if !seen[k] {
			t.Fatalf("the stream has no %s: %s", k, diffStreams(nil, frames))
		}
	}
}

// diffStreams describes how got differs from want ("" when equal).
func diffStreams(want, got []ssetest.Frame) string {
	line := func(f ssetest.Frame) string { return fmt.Sprintf("%s %s %.90s", f.ID, f.Event, f.Data) }
	for i := 0; i < len(want) || i < len(got); i++ {
		switch {
		case i >= len(got):
			return fmt.Sprintf("%d frames, want %d: frame %d missing: %s", len(got), len(want), i, line(want[i]))
		case i >= len(want):
			return fmt.Sprintf("%d frames, want %d: frame %d extra: %s", len(got), len(want), i, line(got[i]))
		case got[i].ID != want[i].ID || got[i].Event != want[i].Event || got[i].Data != want[i].Data:
			return fmt.Sprintf("frame %d is\n  %s\nwant\n  %s", i, line(got[i]), line(want[i]))
		}
	}
	return ""
}

// A Last-Event-ID (or ?after=) that is no frame id this server writes is
// 400 invalid_last_event_id on every stream that reads one: a part needs an
// event and starts at 1, and a chain frame is numbered by itself, so "3.1"
// is none of its ids. A format the events streams do not speak is 400.
func TestLastEventIDRefused(t *testing.T) {
	t.Parallel()
	e := chainSetup(t, options{})
	frames := e.chat(alice, map[string]any{"input": "hello"})
	runID, conv := frames[1].Data["runId"].(string), frames[0].Data["conversationId"].(string)
	e.call(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: input("t-ids", "r1", userMsg("u1", "hi"))}, 202)
	e.uiChat(alice, map[string]any{"id": "chat-ids", "trigger": "submit-message", "messages": []any{
		map[string]any{"id": "m1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "hi"}}}}})
	paths := []string{
		"/v1/agent/runs/" + runID + "/events",
		"/v1/conversations/" + conv + "/events",
		"/v1/agent/runs/" + runID + "/events?format=conversation",
		"/api/v1/agent/runs/t-ids/events",
		"/v1/agent/chat/chat-ids/stream?format=vercel-ai",
		"/v1/chain/stream?run_id=" + runID,
	}
	for _, path := range paths {
		bad := []string{"x", "-1", "1.0", "0.1", "1.", ".1", "1.2.3", "1.-2", "1e3", "99999999999999999999999"}
		if strings.HasPrefix(path, "/v1/chain/") {
			bad = append(bad, "3.1")
		}
		for _, id := range bad {
			e.apiError(resumeReq(path, id, false), 400, "invalid_last_event_id")
			e.apiError(resumeReq(path, id, true), 400, "invalid_last_event_id")
		}
	}
	for _, path := range paths[:2] {
		e.apiError(req{method: "GET", path: path + "?format=vercel-ai", token: alice}, 400, "unsupported_format")
	}
}
