package httpapi

// The AG-UI surface (seeds 001 and 004; the AG-UI 1.0 standard where a seed
// shape would break the real client):
//
//	POST /api/v1/agent/runs                      RunAgentInput → the run's AG-UI stream
//	                                             (Accept: text/event-stream), else 202
//	                                             {taskId, threadId, runId, created}
//	GET  /api/v1/agent/runs/{threadId}/events    the thread's AG-UI stream, seed mode
//	GET  /api/v1/agent/history                   day snapshots (history.go)
//
// The streaming POST is the standard single-endpoint AG-UI server
// (HttpAgent, CopilotKit): Standard mode, one AG-UI run per request, the
// response ends with that run's RUN_FINISHED or RUN_ERROR. A confirmation
// ends the AG-UI run with an interrupt; the next RunAgentInput's resume
// entries decide the same durable confirmation POST /v1/agent/confirmations
// decides (exactly one decision wins) and stream the continuation as the
// next AG-UI run. Frontend tools given in RunAgentInput.tools are offered to
// the model; a call to one ends the run with pendingToolCallIds, and the
// tool messages at the end of the next input start the run that continues.
//
// The events stream is seed 004's: Seed mode, `id:` on every frame, `: keep-alive`
// comments, resumable with Last-Event-ID or ?after=, following later runs.
// A resumed stream continues the one before it: the encoder is first primed
// with the events of the run in progress up to the id, so the frames after
// the id are exactly those a connection that never dropped would have seen.
//
// Only the newest message of the input is new (AG-UI sends the whole
// conversation each time; the thread's stored messages are the history of
// record): a user message starts a run, trailing tool messages answer
// pending frontend calls. RunAgentInput.context is shown to the model with
// the system prompt; forwardedProps.engine names the engine (the router's
// first rule); state is accepted and not used yet.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect/agui"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
)

// The request's shapes are the agui package's (agui.RunAgentInput).
type (
	runAgentInput = agui.RunAgentInput
	aguiMessage   = agui.InputMessage
	aguiTool      = agui.InputTool
	resumeEntry   = agui.ResumeEntry
)

// Limits on what one input may carry.
const (
	maxFrontendTools = 64
	maxContextItems  = 64
)

func (s *Server) aguiRun(w http.ResponseWriter, r *http.Request) error {
	var in runAgentInput
	if err := decodeAGUIInput(r, &in); err != nil {
		return err
	}
	stream := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	if len(in.Resume) > 0 {
		return s.aguiResume(w, r, in, stream)
	}
	ctx, sc := r.Context(), scopeOf(r.Context())

	req := run.StartRequest{ClientRunID: in.RunID, Options: engine.Options{Structured: true}}
	if err := s.frontendTools(in.Tools, &req.Options); err != nil {
		return err
	}
	if len(in.Context) > maxContextItems {
		return apiErr(http.StatusUnprocessableEntity, "invalid_field", "at most %d context items may be given", maxContextItems)
	}
	for _, c := range in.Context {
		req.Options.Context = append(req.Options.Context, chat.ContextItem{Description: c.Description, Value: c.Value})
	}
	if props, ok := aguiObject(in.ForwardedProps); ok {
		if name, ok := props["engine"].(string); ok {
			if err := s.checkEngine("forwardedProps.engine", name); err != nil {
				return err
			}
			req.Engine, req.Options.Engine = name, name
		}
	}
	if in.ThreadID != "" {
		id, exists, err := s.clientConversation(ctx, sc, in.ThreadID)
		if err != nil {
			return err
		}
		if exists {
			req.ConversationID = id
		} else {
			req.CreateWithID = id
		}
	}
	if err := s.newInput(ctx, sc, in.Messages, &req); err != nil {
		return err
	}

	started, err := s.runs.Start(ctx, sc, req, stream)
	var busy *store.BusyError
	if errors.Is(err, store.ErrConflict) && !errors.As(err, &busy) && req.CreateWithID != "" {
		// Created meanwhile by a concurrent request of this principal.
		if _, gerr := s.st.GetConversation(ctx, sc, req.CreateWithID); gerr != nil {
			return notFound("thread_not_found", "thread")
		}
		req.ConversationID, req.CreateWithID = req.CreateWithID, ""
		started, err = s.runs.Start(ctx, sc, req, stream)
	}
	if err != nil {
		return aguiStartErr(err)
	}
	if !stream {
		writeJSON(w, http.StatusAccepted, accepted{TaskID: started.Run.ID, ThreadID: aguiOr(in.ThreadID, started.Conversation.ID),
			RunID: aguiOr(in.RunID, started.Run.ID), Created: started.Created})
		return nil
	}
	enc := agui.NewEncoder(agui.Options{Mode: agui.Standard, ThreadID: in.ThreadID})
	s.serveStream(w, r, started.Stream, enc, streamOptions{endAfter: oneAGUIRun(enc)})
	return nil
}

// accepted is seed 001's answer to a run started without a stream.
type accepted struct {
	TaskID   string `json:"taskId"`   // the run's id (GET /v1/agent/runs/{taskId})
	ThreadID string `json:"threadId"` // the conversation
	RunID    string `json:"runId"`    // the AG-UI runId the run's events carry
	Created  bool   `json:"created"`  // this request created the thread
}

// oneAGUIRun ends a stream after the first AG-UI run it carries ends.
func oneAGUIRun(enc *agui.Encoder) func(event.Event) bool {
	base := enc.RunsEnded()
	return func(event.Event) bool { return enc.RunsEnded() > base }
}

func aguiStartErr(err error) error {
	var busy *store.BusyError
	if errors.Is(err, store.ErrConflict) && !errors.As(err, &busy) {
		return apiErr(http.StatusConflict, "conflict", "the thread changed while the run was starting; try again")
	}
	return toAPIError(err, "thread_not_found", "thread")
}

// newInput fills req from the newest message of the input: a user message
// (text, or text and images) or the tool messages that answer the thread's
// pending frontend tool calls.
func (s *Server) newInput(ctx context.Context, sc chat.Scope, msgs []aguiMessage, req *run.StartRequest) error {
	if len(msgs) == 0 {
		return apiErr(http.StatusUnprocessableEntity, "invalid_input", "field \"messages\" must end with a user message or tool results")
	}
	last := msgs[len(msgs)-1]
	switch last.Role {
	case "user":
		text, parts, err := userContent(last.Content)
		if err != nil {
			return err
		}
		req.Input, req.Parts = text, parts
		return nil
	case "tool":
		if req.ConversationID == "" {
			return notFound("thread_not_found", "thread")
		}
		first := len(msgs) - 1
		for first > 0 && msgs[first-1].Role == "tool" {
			first--
		}
		results, err := s.toolResults(ctx, sc, req.ConversationID, msgs[first:])
		if err != nil {
			return err
		}
		req.ToolResults = results
		return nil
	}
	return apiErr(http.StatusUnprocessableEntity, "invalid_input", "the last message is a %q message; it must be a user message or tool results", last.Role)
}

// userContent reads a user message's content: a string, or AG-UI parts of
// which text and images (by URL or inline data) are understood.
func userContent(raw json.RawMessage) (string, json.RawMessage, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil, nil
	}
	var parts []map[string]any
	if json.Unmarshal(raw, &parts) != nil {
		return "", nil, apiErr(http.StatusBadRequest, "invalid_field", "a user message's content must be a string or an array of parts")
	}
	type part struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"imageUrl,omitempty"`
	}
	var out []part
	var texts []string
	images := 0
	for _, p := range parts {
		typ, _ := p["type"].(string)
		switch typ {
		case "text":
			t, _ := p["text"].(string)
			texts = append(texts, t)
			out = append(out, part{Type: "text", Text: t})
			continue
		case "image", "binary":
			if u := imageURL(p); u != "" {
				out = append(out, part{Type: "image_url", ImageURL: u})
				images++
				continue
			}
		}
		return "", nil, apiErr(http.StatusUnprocessableEntity, "unsupported_content", "content parts of type %q are not supported; send text and images", typ)
	}
	if images == 0 {
		return strings.Join(texts, "\n"), nil, nil
	}
	b, _ := json.Marshal(out)
	return strings.Join(texts, "\n"), b, nil
}

// imageURL reads an image part: AG-UI 1.0's {type:"image", source:{type:
// "url"|"data", value, mimeType}} or the older {type:"binary", mimeType,
// url|data}. Inline data becomes a data: URL.
func imageURL(p map[string]any) string {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	if src, ok := p["source"].(map[string]any); ok {
		switch str(src, "type") {
		case "url":
			return str(src, "value")
		case "data":
			if v, mt := str(src, "value"), str(src, "mimeType"); v != "" && strings.HasPrefix(mt, "image/") {
				return "data:" + mt + ";base64," + v
			}
		}
		return ""
	}
	mt := str(p, "mimeType")
	if mt != "" && !strings.HasPrefix(mt, "image/") {
		return ""
	}
	if u := str(p, "url"); u != "" {
		return u
	}
	if d := str(p, "data"); d != "" && mt != "" {
		return "data:" + mt + ";base64," + d
	}
	return ""
}

// storedCall is a tool call as the agent loop records it on its assistant
// message's metadata.
type storedCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// toolResults turns the input's trailing tool messages into the stored
// tool messages that answer the thread's open calls: those of its last
// assistant message with tool calls that have no result yet.
func (s *Server) toolResults(ctx context.Context, sc chat.Scope, thread string, msgs []aguiMessage) ([]chat.Message, error) {
	stored, err := s.allMessages(ctx, sc, thread)
	if err != nil {
		return nil, err
	}
	open := map[string]storedCall{}
	for _, m := range stored {
		switch m.Role {
		case chat.RoleUser:
			clear(open)
		case chat.RoleAssistant:
			var meta struct {
				ToolCalls []storedCall `json:"toolCalls"`
			}
			if json.Unmarshal(m.Metadata, &meta) == nil && len(meta.ToolCalls) > 0 {
				clear(open)
				for _, c := range meta.ToolCalls {
					open[c.ID] = c
				}
			}
		case chat.RoleTool:
			delete(open, m.ToolCallID)
		}
	}
	var out []chat.Message
	for _, m := range msgs {
		c, ok := open[m.ToolCallID]
		if !ok {
			continue // answered before, or never asked: history the client resends
		}
		delete(open, m.ToolCallID)
		content, _, err := userContent(m.Content)
		if err != nil {
			return nil, err
		}
		status := event.ToolSuccess
		if m.Error != "" {
			status = event.ToolFailure
		}
		output := json.RawMessage(content)
		if !json.Valid(output) || len(bytes.TrimSpace(output)) == 0 {
			output, _ = json.Marshal(content)
		}
		args := c.Arguments
		if !json.Valid(args) || len(bytes.TrimSpace(args)) == 0 {
			args = json.RawMessage(`{}`)
		}
		rec := map[string]any{"tool_name": c.Name, "tool_call_id": c.ID, "tool_call_args": args, "status": status,
			"result": content, "tool_agent_output": output, "frontend": true}
		if m.Error != "" {
			rec["error"] = m.Error
		}
		meta, _ := json.Marshal(rec)
		out = append(out, chat.Message{Role: chat.RoleTool, Content: content, Metadata: meta, ToolName: c.Name, ToolCallID: c.ID})
	}
	if len(out) == 0 {
		return nil, apiErr(http.StatusUnprocessableEntity, "no_pending_tool_call", "the input ends with tool messages, but none answers a tool call the thread is waiting for")
	}
	return out, nil
}

// allMessages reads a thread's messages, oldest first.
func (s *Server) allMessages(ctx context.Context, sc chat.Scope, thread string) ([]chat.Message, error) {
	var all []chat.Message
	p := store.Page{Limit: 500}
	for {
		page, next, err := s.st.ListMessages(ctx, sc, thread, store.MessageFilter{}, p)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		p.Cursor = next
	}
}

// frontendTools takes the input's tools; a registry tool of the same name wins.
func (s *Server) frontendTools(tools []aguiTool, o *engine.Options) error {
	if len(tools) > maxFrontendTools {
		return apiErr(http.StatusUnprocessableEntity, "invalid_field", "at most %d tools may be given", maxFrontendTools)
	}
	for i, t := range tools {
		if t.Name == "" || len(t.Name) > 64 || strings.ContainsFunc(t.Name, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
		}) {
			return apiErr(http.StatusUnprocessableEntity, "invalid_field", "tools[%d].name must be 1 to 64 letters, digits, _ or -", i)
		}
		if s.tools != nil {
			if _, backend := s.tools.Get(t.Name); backend {
				continue
			}
		}
		params := t.Parameters
		if p, ok := aguiObject(params); !ok || p == nil {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		o.FrontendTools = append(o.FrontendTools, chat.FrontendTool{Name: t.Name, Description: t.Description, Parameters: params})
	}
	return nil
}

// aguiResume decides the interrupts the input answers and streams (or
// acknowledges) the continuation.
func (s *Server) aguiResume(w http.ResponseWriter, r *http.Request, in runAgentInput, stream bool) error {
	ctx, sc := r.Context(), scopeOf(r.Context())
	if in.ThreadID == "" {
		return apiErr(http.StatusUnprocessableEntity, "invalid_input", "field \"threadId\" is required with \"resume\"")
	}
	thread, err := s.clientThread(ctx, sc, in.ThreadID)
	if err != nil {
		return err
	}
	type answer struct {
		c         chat.Confirmation
		d         chat.Decision
		cancelled bool
	}
	var answers []answer
	for i, e := range in.Resume {
		d, err := resumeDecision(i, e)
		if err != nil {
			return err
		}
		c, err := s.st.GetConfirmation(ctx, sc, e.InterruptID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && c.ConversationID != thread) {
			return notFound("interrupt_not_found", "interrupt")
		}
		if err != nil {
			return err
		}
		answers = append(answers, answer{c, d, e.Status == "cancelled"})
	}
	if in.RunID == "" {
		in.RunID = chat.NewID() // the continuation is named here, so the 202 can tell it
	}
	for _, a := range answers {
		c, err := s.runs.DecideFor(ctx, sc, a.c.ID, a.d, in.RunID)
		switch {
		case errors.Is(err, store.ErrRunEnded):
			return apiErr(http.StatusConflict, "interrupt_run_ended", "the run this interrupt belongs to has ended; nothing will run")
		case errors.Is(err, store.ErrConflict):
			return &Error{Status: http.StatusConflict, Code: "interrupt_already_resolved", Message: "this interrupt was already decided: " + c.Status,
				Extra: map[string]any{"interruptId": a.c.ID, "status": c.Status}}
		case errors.Is(err, store.ErrExpired) && a.cancelled:
			// Cancelling an expired interrupt is how a client moves on; the run ends by itself.
		case errors.Is(err, store.ErrExpired):
			return apiErr(http.StatusGone, "interrupt_expired", "this interrupt expired before it was answered; cancel it to continue the thread")
		case err != nil:
			return toAPIError(err, "interrupt_not_found", "interrupt")
		}
	}
	runID := answers[0].c.RunID
	if !stream {
		writeJSON(w, http.StatusAccepted, accepted{TaskID: runID, ThreadID: in.ThreadID, RunID: in.RunID})
		return nil
	}
	// Prime the encoder with the run up to the interrupt, then follow after it.
	_, evs, err := s.runs.Timeline(ctx, sc, runID)
	if err != nil {
		return runErr(err)
	}
	var at int64
	for _, ev := range evs {
		if p, ok := ev.Payload.(event.ToolAwaitingData); ok && p.ConfirmationID == answers[0].c.ID {
			at = ev.Seq
			break
		}
	}
	enc := agui.NewEncoder(agui.Options{Mode: agui.Standard, ThreadID: in.ThreadID})
	var scratch []byte
	for _, ev := range evs {
		if ev.Seq > at {
			break
		}
		scratch = enc.Encode(scratch[:0], ev)
	}
	enc.NameNextRun(in.RunID)
	st, err := s.runs.Follow(ctx, sc, "", runID, at)
	if err != nil {
		return runErr(err)
	}
	s.serveStream(w, r, st, enc, streamOptions{endAfter: oneAGUIRun(enc)})
	return nil
}

// resumeDecision reads one resume entry as a decision.
func resumeDecision(i int, e resumeEntry) (chat.Decision, error) {
	bad := func(format string, a ...any) error {
		return apiErr(http.StatusUnprocessableEntity, "invalid_resume", "resume[%d]: "+format, append([]any{i}, a...)...)
	}
	if e.InterruptID == "" {
		return chat.Decision{}, bad("interruptId is required")
	}
	switch e.Status {
	case "cancelled":
		return chat.Decision{Status: chat.ConfirmRejected, Reason: "cancelled"}, nil
	case "resolved":
	default:
		return chat.Decision{}, bad("status must be \"resolved\" or \"cancelled\"")
	}
	var p struct {
		Approved *bool           `json:"approved"`
		Args     json.RawMessage `json:"args"`
		Reason   string          `json:"reason"`
	}
	if json.Unmarshal(e.Payload, &p) != nil || p.Approved == nil {
		return chat.Decision{}, bad("payload must be {\"approved\": true|false, \"args\"?: {…}}")
	}
	d := chat.Decision{Status: chat.ConfirmRejected, Reason: p.Reason}
	if *p.Approved {
		d.Status = chat.ConfirmApproved
	}
	if a := bytes.TrimSpace(p.Args); len(a) > 0 && string(a) != "null" {
		if _, ok := aguiObject(a); !ok {
			return chat.Decision{}, bad("payload.args must be an object")
		}
		d.Args = a
	}
	if len(d.Reason) > 2000 {
		return chat.Decision{}, bad("payload.reason is longer than 2000 characters")
	}
	return d, nil
}

// aguiEvents streams a thread's AG-UI events in seed mode.
func (s *Server) aguiEvents(w http.ResponseWriter, r *http.Request) error {
	after, err := lastEventID(r)
	if err != nil {
		return err
	}
	ctx, sc, name := r.Context(), scopeOf(r.Context()), r.PathValue("threadId")
	thread, err := s.clientThread(ctx, sc, name)
	if err != nil {
		return err
	}
	var opt streamOptions
	if r.URL.Query().Get("snapshot") == "messages" && after == 0 {
		// Load-then-follow in one request: the thread's messages as they are
		// now, then the events after the position they reflect. The position
		// is read first, so a message that lands in between is in both
		// (clients merge by message id) rather than in neither.
		last, err := s.runs.LastSeq(ctx, sc, thread)
		if err != nil {
			return err
		}
		if opt.preamble, err = s.messagesSnapshot(ctx, sc, thread, last); err != nil {
			return toAPIError(err, "thread_not_found", "thread")
		}
		after = last
	}
	st, err := s.runs.Follow(ctx, sc, thread, "", after)
	if err != nil {
		return toAPIError(err, "thread_not_found", "thread")
	}
	enc := agui.NewEncoder(agui.Options{Mode: agui.Seed, ThreadID: name})
	if after > 0 {
		s.primeAGUI(ctx, sc, thread, after, enc)
	}
	s.serveStream(w, r, st, enc, opt)
	return nil
}

// primeAGUI feeds enc the events of the run in progress at seq after, up to
// it, discarding the frames: a client resuming there already has them. The
// stream opened before this call has written the local log out; an id whose
// event is not (yet) in the log leaves enc unprimed, and it then opens the
// run with a RUN_STARTED of its own.
func (s *Server) primeAGUI(ctx context.Context, sc chat.Scope, thread string, after int64, enc *agui.Encoder) {
	at, err := s.st.ListEvents(ctx, sc, thread, "", after-1, after, 1)
	if err != nil || len(at) == 0 {
		return
	}
	_, evs, err := s.runs.Timeline(ctx, sc, at[0].Run)
	if err != nil {
		return
	}
	var scratch []byte
	for _, ev := range evs {
		if ev.Seq > after {
			break
		}
		scratch = enc.Encode(scratch[:0], ev)
	}
}

// decodeAGUIInput reads a RunAgentInput.
func decodeAGUIInput(r *http.Request, v *runAgentInput) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	*v, err = agui.DecodeRunAgentInput(body)
	return err
}

// aguiObject decodes raw as a JSON object; ok is false for anything else.
func aguiObject(raw json.RawMessage) (map[string]any, bool) {
	var m map[string]any
	if len(bytes.TrimSpace(raw)) == 0 || json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

func aguiOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
