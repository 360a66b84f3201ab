package httpapi

// The AI SDK UI message stream surface (seed 000 CHAT-070): what a stock
// `useChat` with `DefaultChatTransport` (AI SDK 5, 6 and 7) needs from
// POST /v1/agent/chat?format=vercel-ai and its resume endpoint
// GET /v1/agent/chat/{chatId}/stream?format=vercel-ai.
//
// The transport sends the whole client-side conversation with every request;
// the server's stored history is the truth, so only what is new is read from
// it: the last user message (a new turn), the approval decisions in the
// assistant message being continued, or the answer to regenerate.
//
// Chat ids are the client's, in the principal's own namespace
// (clientConversation in clientid.go, shared with AG-UI thread ids).
//
// The assistant message of a run has the run's id. A response ends with
// `finish` and `data: [DONE]` when its run ends, or when the run pauses for a
// person: then the message finishes with finishReason "tool-calls", and the
// client's next request, carrying the decision in the message's tool part
// (state "approval-responded"), continues the same message.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/vercel"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
)

// The request's shapes are the vercel package's (vercel.Request).
type (
	uiRequest = vercel.Request
	uiMessage = vercel.RequestMessage
)

// Triggers of DefaultChatTransport.
const (
	triggerSubmit     = "submit-message"
	triggerRegenerate = "regenerate-message"
)

var (
	chatIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:~-]{1,128}$`)
)

// vercelChat serves POST /v1/agent/chat?format=vercel-ai.
func (s *Server) vercelChat(w http.ResponseWriter, r *http.Request) error {
	var body uiRequest
	if err := decodeUIRequest(r, &body); err != nil {
		return err
	}
	if err := s.checkEngine("engine", body.Engine); err != nil {
		return err
	}
	var err error
	if body.Title, err = checkTitle(body.Title); err != nil {
		return err
	}
	switch body.Trigger {
	case "", triggerSubmit, triggerRegenerate:
	default:
		return apiErr(http.StatusUnprocessableEntity, "invalid_field", "field \"trigger\" must be submit-message or regenerate-message")
	}
	ctx := r.Context()
	sc := scopeOf(ctx)
	convID, exists, err := s.vercelConversation(ctx, sc, body)
	if err != nil {
		return err
	}

	// A decision in the assistant message being continued resumes its run.
	if msg, ok := continued(body); ok && exists {
		return s.vercelContinue(w, r, sc, convID, msg)
	}
	if body.Trigger == triggerRegenerate && exists {
		return s.vercelRegenerate(w, r, sc, convID, body)
	}
	if exists {
		old, err := s.editedRun(ctx, sc, convID, body)
		if err != nil {
			return conversationErr(err)
		}
		if old != "" {
			input, parts, err := newInput(body)
			if err != nil {
				return err
			}
			return s.startReplacing(w, r, sc, convID, old, run.StartRequest{Input: input, Parts: parts, Engine: body.Engine})
		}
	}

	req := run.StartRequest{Title: body.Title, Engine: body.Engine}
	if exists {
		req.ConversationID = convID
	} else {
		req.CreateWithID = convID // "" makes a new id
	}
	if req.Input, req.Parts, err = newInput(body); err != nil {
		return err
	}
	started, err := s.runs.Start(ctx, sc, req, true)
	if req.CreateWithID != "" && errors.Is(err, store.ErrConflict) && !isBusy(err) {
		// Another request created the chat's conversation first.
		req.ConversationID, req.CreateWithID = req.CreateWithID, ""
		started, err = s.runs.Start(ctx, sc, req, true)
	}
	if err != nil {
		return conversationErr(err)
	}
	w.Header().Set("X-Run-ID", started.Run.ID)
	w.Header().Set("X-Conversation-ID", started.Conversation.ID)
	s.serveUIStream(w, r, started.Stream, "", nil)
	return nil
}

// vercelResume serves GET /v1/agent/chat/{chatId}/stream?format=vercel-ai:
// 204 when the chat has no active run, else the run's whole response from
// its start, then live. (The AI SDK replays a resumed stream from its first
// `start`, so Last-Event-ID is not used here.)
func (s *Server) vercelResume(w http.ResponseWriter, r *http.Request) error {
	switch f := r.URL.Query().Get("format"); f {
	case "", "vercel-ai":
	default:
		return apiErr(http.StatusBadRequest, "unsupported_format", "format %q is not supported here; use vercel-ai", f)
	}
	ctx := r.Context()
	sc := scopeOf(ctx)
	chatID := r.PathValue("chatId")
	if !chatIDPattern.MatchString(chatID) {
		return apiErr(http.StatusBadRequest, "invalid_chat_id", "the chat id must be 1 to 128 letters, digits or ._:~-")
	}
	convID, exists, err := s.clientConversation(ctx, sc, chatID)
	if err != nil {
		return err
	}
	if !exists {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	active, err := s.st.ActiveRun(ctx, sc, convID)
	if errors.Is(err, store.ErrNotFound) {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return err
	}
	st, err := s.runs.Follow(ctx, sc, "", active.ID, 0)
	if errors.Is(err, store.ErrNotFound) {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return err
	}
	w.Header().Set("X-Run-ID", active.ID)
	w.Header().Set("X-Conversation-ID", convID)
	s.serveUIStream(w, r, st, "", nil)
	return nil
}

// vercelContinue applies the decisions in the assistant message msg and
// streams its run's continuation as the same message.
func (s *Server) vercelContinue(w http.ResponseWriter, r *http.Request, sc chat.Scope, convID string, msg uiMessage) error {
	ctx := r.Context()
	type decision struct {
		id string
		d  chat.Decision
	}
	var decisions []decision
	runID := ""
	// The continuation starts after the wait was announced: the calls decided
	// now will have outcomes, the ones still awaiting keep the run paused.
	pw := newPauseWatch()
	for _, p := range msg.Parts {
		if p.State == "approval-requested" && p.Approval != nil && p.ToolCallID != "" {
			pw.awaiting[p.ToolCallID] = p.Approval.ID
		}
		if p.State != "approval-responded" || p.Approval == nil {
			continue
		}
		if p.Approval.Approved == nil || p.Approval.ID == "" {
			return apiErr(http.StatusUnprocessableEntity, "invalid_field", "an approval-responded tool part needs approval.id and approval.approved")
		}
		if len(p.Approval.Reason) > 2000 {
			return apiErr(http.StatusUnprocessableEntity, "invalid_field", "an approval reason is longer than 2000 characters")
		}
		c, err := s.st.GetConfirmation(ctx, sc, p.Approval.ID)
		if err == nil && c.ConversationID != convID {
			err = store.ErrNotFound // another chat's confirmation
		}
		if err != nil {
			return toAPIError(err, "confirmation_not_found", "confirmation")
		}
		if runID != "" && c.RunID != runID {
			return apiErr(http.StatusUnprocessableEntity, "invalid_field", "the approvals in one message must belong to one run")
		}
		runID = c.RunID
		status := chat.ConfirmRejected
		if *p.Approval.Approved {
			status = chat.ConfirmApproved
		}
		decisions = append(decisions, decision{c.ID, chat.Decision{Status: status, Reason: p.Approval.Reason}})
		pw.open[c.ToolCallID] = true
	}
	for _, d := range decisions {
		c, err := s.runs.Decide(ctx, sc, d.id, d.d)
		switch {
		case errors.Is(err, store.ErrRunEnded):
			return apiErr(http.StatusConflict, "confirmation_run_ended", "the run this confirmation belongs to has ended; nothing will run")
		case errors.Is(err, store.ErrConflict):
			return &Error{Status: http.StatusConflict, Code: "confirmation_already_decided", Message: "this confirmation was already decided: " + c.Status,
				Extra: map[string]any{"confirmation": viewConfirmation(c)}}
		case errors.Is(err, store.ErrExpired):
			// The run learns of the expiry and ends; the stream shows how.
		case err != nil:
			return toAPIError(err, "confirmation_not_found", "confirmation")
		}
	}
	after, err := s.continuationPoint(ctx, sc, runID, decisions[0].id)
	if err != nil {
		return runErr(err)
	}
	st, err := s.runs.Follow(ctx, sc, "", runID, after)
	if err != nil {
		return runErr(err)
	}
	w.Header().Set("X-Run-ID", runID)
	w.Header().Set("X-Conversation-ID", convID)
	s.serveUIStream(w, r, st, msg.ID, pw)
	return nil
}

// continuationPoint is the seq after which a run's continuation begins: just
// before the run.resumed that follows the confirmation's wait, or, while the
// run has not resumed yet, after its last event (the pause).
func (s *Server) continuationPoint(ctx context.Context, sc chat.Scope, runID, confirmationID string) (int64, error) {
	_, evs, err := s.runs.Timeline(ctx, sc, runID)
	if err != nil {
		return 0, err
	}
	waited := -1
	for i, ev := range evs {
		switch p := ev.Payload.(type) {
		case event.ToolAwaitingData:
			if p.ConfirmationID == confirmationID {
				waited = i
			}
		case event.RunResumedData:
			if waited >= 0 {
				return ev.Seq - 1, nil
			}
		}
	}
	if len(evs) == 0 {
		return 0, nil
	}
	return evs[len(evs)-1].Seq, nil
}

// vercelRegenerate answers the chat's last user message again in a new run
// (trigger regenerate-message). The answer it replaces stays stored as the
// previous version; the new run's context leaves it out.
func (s *Server) vercelRegenerate(w http.ResponseWriter, r *http.Request, sc chat.Scope, convID string, body uiRequest) error {
	ctx := r.Context()
	runs, err := s.st.ListRuns(ctx, sc, convID)
	if err != nil {
		return conversationErr(err)
	}
	var old chat.Run
	for i := len(runs) - 1; i >= 0; i-- {
		if body.MessageID == "" || runs[i].ID == body.MessageID {
			old = runs[i]
			break
		}
	}
	if old.ID == "" {
		if body.MessageID != "" {
			return notFound("message_not_found", "message")
		}
		return apiErr(http.StatusUnprocessableEntity, "nothing_to_regenerate", "this chat has no answer to regenerate")
	}
	msgs, _, err := s.st.ListMessages(ctx, sc, convID, store.MessageFilter{RunID: old.ID}, store.Page{Limit: 1})
	if err != nil {
		return err
	}
	input, parts := old.Input, json.RawMessage(nil)
	if len(msgs) > 0 && msgs[0].Role == chat.RoleUser {
		input, parts = msgs[0].Content, msgs[0].Parts
	}
	return s.startReplacing(w, r, sc, convID, old.ID, run.StartRequest{Input: input, Parts: parts, Engine: body.Engine})
}

// editedRun finds the run a submit-message request replaces when it edits
// an earlier user message (messageId names the last message, a user's,
// after the client dropped what followed it): the run after the assistant
// message before it, or the chat's first run.
func (s *Server) editedRun(ctx context.Context, sc chat.Scope, convID string, body uiRequest) (string, error) {
	n := len(body.Messages)
	if body.Trigger == triggerRegenerate || body.MessageID == "" || n == 0 ||
		body.Messages[n-1].ID != body.MessageID || body.Messages[n-1].Role != "user" {
		return "", nil
	}
	prev := ""
	for i := n - 2; i >= 0; i-- {
		if body.Messages[i].Role == "assistant" {
			prev = body.Messages[i].ID
			break
		}
	}
	runs, err := s.st.ListRuns(ctx, sc, convID)
	if err != nil {
		return "", err
	}
	if prev == "" {
		if len(runs) > 0 {
			return runs[0].ID, nil
		}
		return "", nil
	}
	for i, r := range runs {
		if r.ID == prev && i+1 < len(runs) {
			return runs[i+1].ID, nil
		}
	}
	return "", nil
}

// startReplacing starts a run that replaces the answers of run old and of
// the runs after it (regenerate-message, or an edited user message).
func (s *Server) startReplacing(w http.ResponseWriter, r *http.Request, sc chat.Scope, convID, old string, req run.StartRequest) error {
	req.ConversationID, req.Regenerates = convID, old
	started, err := s.runs.Start(r.Context(), sc, req, true)
	if err != nil {
		return conversationErr(err)
	}
	w.Header().Set("X-Run-ID", started.Run.ID)
	w.Header().Set("X-Conversation-ID", convID)
	s.serveUIStream(w, r, started.Stream, "", nil)
	return nil
}

// serveUIStream writes st as a UI message stream, ending it when the run
// ends or pauses. messageID names the assistant message when continuing one
// the client holds ("" for the run id); pw knows the calls decided or still
// awaiting before the stream's first event (nil for none).
func (s *Server) serveUIStream(w http.ResponseWriter, r *http.Request, st *run.Stream, messageID string, pw *pauseWatch) {
	sdk5 := r.URL.Query().Get("sdk") == "5"
	enc := vercel.NewEncoder(vercel.Options{MessageID: messageID, AISDK5: sdk5, ExplicitPause: true})
	if pw == nil {
		pw = newPauseWatch()
	}
	s.serveStream(w, r, st, enc, streamOptions{
		header: http.Header{http.CanonicalHeaderKey(vercel.HeaderName): {vercel.HeaderValue}},
		endAfter: func(ev event.Event) bool {
			pw.see(ev)
			return false
		},
		idleEnd: func() ([]byte, bool) {
			if !pw.paused() {
				return nil, false
			}
			tail := enc.Pause(nil)
			return dialect.AppendFrame(tail, dialect.Frame{Data: []byte("[DONE]")}), true
		},
	})
}

// pauseWatch follows a run's events to tell when it has paused for a
// person: a call awaits a decision and no other call of the run has an
// outcome still to come. Events say this before the run's status does, and
// an engine reports nothing after it until a decision resumes the run.
type pauseWatch struct {
	open     map[string]bool   // calls announced or resumed whose outcome has not come
	awaiting map[string]string // call id → confirmation id, for calls waiting for a person
}

func newPauseWatch() *pauseWatch {
	return &pauseWatch{open: map[string]bool{}, awaiting: map[string]string{}}
}

func (p *pauseWatch) see(ev event.Event) {
	switch d := ev.Payload.(type) {
	case event.RunStartedData:
		clear(p.open)
		clear(p.awaiting)
	case event.ToolCallStartedData:
		p.open[d.ToolCallID] = true
	case event.ToolCallReadyData:
		p.open[d.ToolCallID] = true
	case event.ToolAwaitingData:
		delete(p.open, d.ToolCallID)
		p.awaiting[d.ToolCallID] = d.ConfirmationID
	case event.RunResumedData:
		for call, c := range p.awaiting {
			if c == d.ConfirmationID {
				delete(p.awaiting, call)
				p.open[call] = true
			}
		}
	case event.ToolResultData:
		delete(p.open, d.ToolCallID)
		delete(p.awaiting, d.ToolCallID)
	}
}

func (p *pauseWatch) paused() bool { return len(p.open) == 0 && len(p.awaiting) > 0 }

// vercelConversation maps the request to a conversation: its conversationId
// (which must exist), or its chat id. exists is false for a chat not seen
// before (convID is then the id to create it with) and for a request naming
// neither (convID "").
func (s *Server) vercelConversation(ctx context.Context, sc chat.Scope, body uiRequest) (convID string, exists bool, err error) {
	switch {
	case body.ConversationID != "":
		if _, err := s.st.GetConversation(ctx, sc, body.ConversationID); err != nil {
			return "", false, conversationErr(err)
		}
		return body.ConversationID, true, nil
	case body.ID != nil:
		if !chatIDPattern.MatchString(*body.ID) {
			return "", false, apiErr(http.StatusBadRequest, "invalid_field", "field \"id\" (the chat id) must be 1 to 128 letters, digits or ._:~-")
		}
		return s.clientConversation(ctx, sc, *body.ID)
	}
	return "", false, nil
}

// continued returns the assistant message a submit-message request continues
// with decisions: the message named by messageId, else the last message.
func continued(body uiRequest) (uiMessage, bool) {
	if body.Trigger == triggerRegenerate || len(body.Messages) == 0 {
		return uiMessage{}, false
	}
	msg := body.Messages[len(body.Messages)-1]
	if body.MessageID != "" {
		for _, m := range body.Messages {
			if m.ID == body.MessageID {
				msg = m
			}
		}
	}
	if msg.Role != "assistant" {
		return uiMessage{}, false
	}
	for _, p := range msg.Parts {
		if p.State == "approval-responded" {
			return msg, true
		}
	}
	return uiMessage{}, false
}

// newInput is the new turn's input: the native input field, else the text of
// the last message, which must be the user's. Image files become parts.
func newInput(body uiRequest) (string, json.RawMessage, error) {
	if body.Input != "" {
		return body.Input, nil, nil
	}
	if len(body.Messages) == 0 {
		return "", nil, apiErr(http.StatusUnprocessableEntity, "invalid_input", "field \"messages\" must end with the user's new message")
	}
	last := body.Messages[len(body.Messages)-1]
	if last.Role != "user" {
		return "", nil, apiErr(http.StatusUnprocessableEntity, "invalid_input", "the last message must be the user's (or an assistant message with tool approvals)")
	}
	type part struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"imageUrl,omitempty"`
	}
	var texts []string
	var parts []part
	images := false
	for _, p := range last.Parts {
		switch {
		case p.Type == "text":
			texts = append(texts, p.Text)
			parts = append(parts, part{Type: "text", Text: p.Text})
		case p.Type == "file" && strings.HasPrefix(p.MediaType, "image/") && p.URL != "":
			images = true
			parts = append(parts, part{Type: "image_url", ImageURL: p.URL})
		case p.Type == "file":
			return "", nil, apiErr(http.StatusUnprocessableEntity, "unsupported_part", "only image files can be attached, not %q", p.MediaType)
		}
	}
	input := strings.Join(texts, "\n")
	if strings.TrimSpace(input) == "" {
		return "", nil, apiErr(http.StatusUnprocessableEntity, "invalid_input", "the last user message has no text")
	}
	if !images {
		return input, nil, nil
	}
	raw, err := json.Marshal(parts)
	return input, raw, err
}

func isBusy(err error) bool {
	var busy *store.BusyError
	return errors.As(err, &busy)
}

// decodeUIRequest reads the AI SDK transport's body.
func decodeUIRequest(r *http.Request, v *uiRequest) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	*v, err = vercel.DecodeRequest(body)
	return err
}
