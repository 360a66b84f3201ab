package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/conversation"
	"github.com/agentchat/agentchat/internal/dialect/native"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
)

func runErr(err error) error { return toAPIError(err, errcode.RunNotFound, "run") }

// chat starts a run and streams it (seed 000 CHAT-030) in the format asked
// for: native (default), vercel-ai (the AI SDK UI message stream, whose
// request body is the AI SDK transport's; see vercel.go) or conversation
// (seed 002's observable stream).
func (s *Server) chat(w http.ResponseWriter, r *http.Request) error {
	st, enc, err := s.startChat(w, r)
	if err != nil || st == nil {
		return err
	}
	// Only the stream and its encoder stay on the stack while it is
	// served: the start's frame (~2.8 KiB) would keep the goroutine's
	// stack from being halved (see sseStream).
	s.serveStream(w, r, st, enc)
	return nil
}

// startChat starts the run chat streams, and sets its headers. The stream
// is nil when it answered the request itself: the AI SDK's format, and a
// retry of an idempotent start, attached to the run the first started.
func (s *Server) startChat(w http.ResponseWriter, r *http.Request) (*run.Stream, dialect.Exchange, error) {
	var enc dialect.Exchange
	switch f := r.URL.Query().Get("format"); f {
	case "", "native":
		enc = native.NewEncoder()
	case "vercel-ai":
		return nil, nil, s.vercelChat(w, r)
	case "conversation":
		enc = conversation.NewEncoder()
	default:
		return nil, nil, apiErr(http.StatusBadRequest, errcode.UnsupportedFormat, "format %q is not supported; use native, vercel-ai or conversation", f)
	}
	raw, err := readBody(r)
	if err != nil {
		return nil, nil, err
	}
	body, err := native.DecodeChatRequest(raw)
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkEngine("engine", body.Engine); err != nil {
		return nil, nil, err
	}
	if body.Title, err = checkTitle(body.Title); err != nil {
		return nil, nil, err
	}
	sc := scopeOf(r.Context())
	k, err := s.idempotency(r, raw) // idempotency.go
	if err != nil {
		return nil, nil, err
	}
	defer s.unsettled(r, &k)
	if k.runID != "" {
		return nil, nil, s.attach(w, r, k, enc)
	}
	req := run.StartRequest{ConversationID: body.ConversationID, Input: body.Input, Parts: body.Parts(), Title: body.Title, Engine: body.Engine,
		AgentID: body.AgentID, AgentVersion: body.AgentVersion, ParentID: body.ParentID, Multitask: body.Multitask()}
	switch {
	case body.Regenerate != nil:
		req.Regenerates = body.Regenerate.MessageID
	case body.Edit != nil:
		req.Edits, req.Input = body.Edit.MessageID, body.Edit.Input
	}
	started, err := s.runs.Start(r.Context(), sc, req, true)
	s.settle(r, &k, started.Run, err)
	if err != nil {
		return nil, nil, steerErr(err)
	}
	w.Header().Set("X-Run-ID", started.Run.ID)
	w.Header().Set("X-Conversation-ID", started.Conversation.ID)
	if started.Queued {
		// multitaskStrategy enqueue: the stream opens now, its run starts
		// when the runs before it end.
		w.Header().Set("X-Run-Status", chat.RunQueued)
	}
	return started.Stream, enc, nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) error {
	run, err := s.runs.Get(r.Context(), scopeOf(r.Context()), r.PathValue("runId"))
	if err != nil {
		return runErr(err)
	}
	writeJSON(w, http.StatusOK, native.RunOf(run))
	return nil
}

// runEvents attaches to a run's stream: replay after Last-Event-ID, then live.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) error {
	return s.events(w, r, "", r.PathValue("runId"), runErr)
}

// conversationEvents follows a conversation across its runs.
func (s *Server) conversationEvents(w http.ResponseWriter, r *http.Request) error {
	return s.events(w, r, r.PathValue("id"), "", conversationErr)
}

// events serves a thread's or a run's stream, native or, with
// ?format=conversation, seed 002's observable stream, from the client's
// Last-Event-ID on.
func (s *Server) events(w http.ResponseWriter, r *http.Request, thread, runID string, notFound func(error) error) error {
	st, enc, err := s.follow(r, thread, runID, notFound)
	if err != nil {
		return err
	}
	// Only the stream and its encoder stay on the stack while it is
	// served (see sseStream).
	s.serveStream(w, r, st, enc)
	return nil
}

// follow opens the stream events serves, in the format the request asks for.
func (s *Server) follow(r *http.Request, thread, runID string, notFound func(error) error) (*run.Stream, dialect.Exchange, error) {
	var enc dialect.Exchange
	primed := false // native frames are a function of their event alone
	switch f := r.URL.Query().Get("format"); f {
	case "", "native":
		enc = native.NewEncoder()
	case "conversation":
		enc, primed = conversation.NewEncoder(), true
	default:
		return nil, nil, apiErr(http.StatusBadRequest, errcode.UnsupportedFormat, "format %q is not supported here; use native or conversation", f)
	}
	at, err := lastEventID(r)
	if err != nil {
		return nil, nil, err
	}
	ctx := r.Context()
	st, err := s.runs.Follow(ctx, scopeOf(ctx), thread, runID, at.Replay())
	if err != nil {
		return nil, nil, notFound(err)
	}
	s.resume(ctx, st, enc, at, primed)
	return st, enc, nil
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) error {
	run, err := s.runs.Cancel(r.Context(), scopeOf(r.Context()), r.PathValue("runId"))
	if err != nil {
		return runErr(err)
	}
	writeJSON(w, http.StatusOK, native.RunOf(run))
	return nil
}

func (s *Server) timeline(w http.ResponseWriter, r *http.Request) error {
	run, evs, err := s.runs.Timeline(r.Context(), scopeOf(r.Context()), r.PathValue("runId"))
	if errors.Is(err, store.ErrNotFound) {
		return apiErr(http.StatusNotFound, errcode.RunTimelineNotFound, "no timeline for this run: it does not exist or has expired")
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, native.TimelineOf(run, evs))
	return nil
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	d, err := native.DecodeDecision(body)
	if err != nil {
		return err
	}
	c, err := s.runs.Decide(r.Context(), scopeOf(r.Context()), r.PathValue("id"), d)
	if err != nil {
		return confirmationErr(c, err)
	}
	writeJSON(w, http.StatusOK, native.ConfirmationOf(c))
	return nil
}

// confirmationErr answers a decision the run service refused; c is the
// confirmation as stored (its decision, when it was decided before).
func confirmationErr(c chat.Confirmation, err error) error {
	switch {
	case errors.Is(err, store.ErrRunEnded):
		return apiErr(http.StatusConflict, errcode.ConfirmationRunEnded, "the run this confirmation belongs to has ended; nothing will run")
	case errors.Is(err, store.ErrConflict):
		return &Error{Status: http.StatusConflict, Code: errcode.ConfirmationAlreadyDecided, Message: "this confirmation was already decided: " + c.Status,
			Extra: map[string]any{"confirmation": native.ConfirmationOf(c)}}
	case errors.Is(err, store.ErrExpired):
		return apiErr(http.StatusGone, errcode.ConfirmationExpired, "this confirmation expired before it was decided")
	}
	return toAPIError(err, errcode.ConfirmationNotFound, "confirmation")
}

func (s *Server) listConfirmations(w http.ResponseWriter, r *http.Request) error {
	status := r.URL.Query().Get("status")
	switch status {
	case "", chat.ConfirmPending, chat.ConfirmApproved, chat.ConfirmRejected, chat.ConfirmExpired, chat.ConfirmCancelled:
	default:
		return apiErr(http.StatusBadRequest, errcode.InvalidStatus, "status must be pending, approved, rejected, expired or cancelled")
	}
	list, err := s.runs.Confirmations(r.Context(), scopeOf(r.Context()), status)
	if err != nil {
		return err
	}
	out := make([]native.Confirmation, 0, len(list))
	for _, c := range list {
		out = append(out, native.ConfirmationOf(c))
	}
	writeJSON(w, http.StatusOK, map[string]any{"confirmations": out})
	return nil
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request) error {
	type toolView struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Confirm     string          `json:"confirm"`
		Source      string          `json:"source"`
	}
	tools := []toolView{}
	var servers any = []any{}
	if s.tools != nil {
		for _, t := range s.tools.List() {
			tools = append(tools, toolView{t.Name, t.Description, t.Parameters, string(t.Confirm), t.Source})
		}
		if list := s.tools.Servers(); len(list) > 0 {
			servers = list
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": tools, "mcpServers": servers})
	return nil
}
