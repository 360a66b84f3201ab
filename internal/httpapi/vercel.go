package httpapi

// The AI SDK UI message stream surface (seed 000 CHAT-070): what a stock
// `useChat` with `DefaultChatTransport` (AI SDK 5, 6 and 7) needs from
// POST /v1/agent/chat?format=vercel-ai and its resume endpoint
// GET /v1/agent/chat/{chatId}/stream?format=vercel-ai.
//
// The transport sends the whole client-side conversation with every request;
// the server's stored history is the truth, so only what is new is read from
// it (vercel.Request): the approval decisions in the assistant message being
// continued, an answer to regenerate, an edited user message, or the last
// user message (a new turn). Chat ids are the client's, in the principal's
// own namespace (run.Service.ClientConversation, shared with AG-UI thread
// ids). The assistant message of a run has the run's id; how a response
// ends is vercel.Exchange's.

import (
	"errors"
	"net/http"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/vercel"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
)

// vercelChat serves POST /v1/agent/chat?format=vercel-ai.
func (s *Server) vercelChat(w http.ResponseWriter, r *http.Request) error {
	raw, err := readBody(r)
	if err != nil {
		return err
	}
	body, err := vercel.DecodeRequest(raw)
	if err != nil {
		return err
	}
	if err := s.checkEngine("engine", body.Engine); err != nil {
		return err
	}
	if body.Title, err = checkTitle(body.Title); err != nil {
		return err
	}
	ctx, sc := r.Context(), scopeOf(r.Context())
	k, err := s.idempotency(r, raw) // idempotency.go
	if err != nil {
		return err
	}
	defer s.unsettled(r, &k)
	if k.runID != "" {
		st, err := s.runs.Follow(ctx, sc, "", k.runID, 0)
		if err != nil {
			return runErr(err)
		}
		s.serveChat(w, r, k.runID, k.convID, st, vercel.ExchangeOptions{}, dialect.ID{})
		return nil
	}
	req := run.StartRequest{Title: body.Title, Engine: body.Engine, AgentID: body.AgentID, AgentVersion: body.AgentVersion,
		Multitask: chat.MultitaskStrategy(body.MultitaskStrategy)}
	exists := false
	switch chatID, err := body.ChatID(); {
	case body.ConversationID != "":
		if _, err := s.runs.Conversation(ctx, sc, body.ConversationID); err != nil {
			return conversationErr(err)
		}
		req.ConversationID, exists = body.ConversationID, true
	case err != nil:
		return err
	case chatID != "":
		id, found, err := s.runs.ClientConversation(ctx, sc, chatID)
		if err != nil {
			return err
		}
		if exists = found; found {
			req.ConversationID = id
		} else {
			req.CreateWithID = id
		}
	}
	if exists {
		if msg, ok := body.Continued(); ok {
			return s.vercelContinue(w, r, req.ConversationID, msg)
		}
		if body.Regenerate() {
			started, err := s.runs.Regenerate(ctx, sc, run.RegenerateRequest{ConversationID: req.ConversationID, Answer: body.MessageID,
				Engine: body.Engine, AgentID: body.AgentID, AgentVersion: body.AgentVersion}, true)
			s.settle(r, &k, started.Run, err)
			if err != nil {
				return steerErr(err) // tree.go
			}
			s.serveChat(w, r, started.Run.ID, started.Conversation.ID, started.Stream, vercel.ExchangeOptions{}, dialect.ID{})
			return nil
		}
		if after, ok := body.Edits(); ok {
			// The edited message goes where the client has it: after the
			// answer before it, a sibling of the version it replaces.
			if req.ParentID, err = s.runs.ForkAfter(ctx, sc, req.ConversationID, after); err != nil {
				return conversationErr(err)
			}
		}
	}
	if req.Input, req.Parts, err = body.NewInput(); err != nil {
		return err
	}
	started, err := s.runs.Start(ctx, sc, req, true)
	s.settle(r, &k, started.Run, err)
	if err != nil {
		return steerErr(err)
	}
	if started.Queued {
		w.Header().Set("X-Run-Status", chat.RunQueued) // multitaskStrategy enqueue
	}
	s.serveChat(w, r, started.Run.ID, started.Conversation.ID, started.Stream, vercel.ExchangeOptions{}, dialect.ID{})
	return nil
}

// serveChat streams a run as the response, leaving out the frames up to at
// (the zero ID: none).
func (s *Server) serveChat(w http.ResponseWriter, r *http.Request, runID, convID string, st *run.Stream, opts vercel.ExchangeOptions, at dialect.ID) {
	w.Header().Set("X-Run-ID", runID)
	w.Header().Set("X-Conversation-ID", convID)
	opts.AISDK5 = r.URL.Query().Get("sdk") == "5"
	x := vercel.NewExchange(opts)
	s.resume(r.Context(), st, x, at, false) // the stream replays the run from its start
	s.serveStream(w, r, st, x)
}

// vercelContinue applies the decisions in the assistant message msg and
// streams its run's continuation as the same message.
func (s *Server) vercelContinue(w http.ResponseWriter, r *http.Request, convID string, msg vercel.RequestMessage) error {
	ctx, sc := r.Context(), scopeOf(r.Context())
	decisions, err := msg.Decisions()
	if err != nil {
		return err
	}
	if len(decisions) == 0 {
		return apiErr(http.StatusUnprocessableEntity, errcode.InvalidField, "an approval-responded tool part needs approval.id and approval.approved")
	}
	replies := make([]run.Reply, len(decisions))
	for i, d := range decisions {
		// An expired confirmation: the run learns of the expiry and ends; the stream shows how.
		replies[i] = run.Reply{ConfirmationID: d.ConfirmationID, Decision: d.Decision, ExpiredOK: true}
	}
	c, err := s.runs.Continue(ctx, sc, convID, replies, "")
	var re *run.ReplyError
	switch {
	case errors.Is(err, run.ErrRunsMixed):
		return apiErr(http.StatusUnprocessableEntity, errcode.InvalidField, "the approvals in one message must belong to one run")
	case errors.As(err, &re):
		return confirmationErr(re.Confirmation, err)
	case err != nil:
		return toAPIError(err, errcode.ConfirmationNotFound, "confirmation")
	}
	// The continuation starts after the wait was announced: the calls decided
	// now will have outcomes, the ones still awaiting keep the run paused.
	wait, err := s.runs.WaitOf(ctx, sc, c.RunID, c.Decided[0].ID)
	if err != nil {
		return runErr(err)
	}
	st, err := s.runs.Follow(ctx, sc, "", c.RunID, wait.Resumed)
	if err != nil {
		return runErr(err)
	}
	opts := vercel.ExchangeOptions{MessageID: msg.ID, Awaiting: msg.Awaiting()}
	for _, d := range c.Decided {
		opts.Decided = append(opts.Decided, d.ToolCallID)
	}
	s.serveChat(w, r, c.RunID, convID, st, opts, dialect.ID{})
	return nil
}

// vercelResume serves GET /v1/agent/chat/{chatId}/stream?format=vercel-ai:
// 204 when the chat has no active run, else the run's whole response from
// its start, then live. The AI SDK replays a resumed stream from its first
// `start` and sends no Last-Event-ID; a client that sends one (an
// EventSource reconnecting) gets the frames after it: the run is encoded
// from its start all the same, so the frames, their state and their ids are
// those it was reading.
func (s *Server) vercelResume(w http.ResponseWriter, r *http.Request) error {
	switch f := r.URL.Query().Get("format"); f {
	case "", "vercel-ai":
	default:
		return apiErr(http.StatusBadRequest, errcode.UnsupportedFormat, "format %q is not supported here; use vercel-ai", f)
	}
	at, err := lastEventID(r)
	if err != nil {
		return err
	}
	ctx, sc := r.Context(), scopeOf(r.Context())
	chatID := r.PathValue("chatId")
	if !vercel.ValidChatID(chatID) {
		return apiErr(http.StatusBadRequest, errcode.InvalidChatID, "the chat id must be 1 to 128 letters, digits or ._:~-")
	}
	convID, exists, err := s.runs.ClientConversation(ctx, sc, chatID)
	if err != nil {
		return err
	}
	if !exists {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	active, err := s.runs.Active(ctx, sc, convID)
	if err == nil {
		var st *run.Stream
		if st, err = s.runs.Follow(ctx, sc, "", active.ID, 0); err == nil {
			s.serveChat(w, r, active.ID, convID, st, vercel.ExchangeOptions{}, at)
			return nil
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return err
}
