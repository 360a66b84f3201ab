package httpapi

// The AG-UI surface (seeds 001 and 004; the AG-UI 1.0 standard where a seed
// shape would break the real client):
//
//	POST /api/v1/agent/runs                      RunAgentInput → the run's AG-UI stream
//	                                             (Accept: text/event-stream), else 202
//	                                             {taskId, threadId, runId, created}
//	GET  /api/v1/agent/runs/{threadId}/events    the thread's AG-UI stream, seed mode
//	GET  /api/v1/agent/history                   day snapshots
//
// The streaming POST is the standard single-endpoint AG-UI server
// (HttpAgent, CopilotKit): one AG-UI run per request (agui.NewRunExchange).
// A confirmation ends the AG-UI run with an interrupt; the next
// RunAgentInput's resume entries decide the same durable confirmation POST
// /v1/agent/confirmations decides (exactly one decision wins) and stream the
// continuation as the next AG-UI run (agui.NewContinuation). Frontend tools
// given in RunAgentInput.tools are offered to the model; a call to one ends
// the run with pendingToolCallIds, and the tool messages at the end of the
// next input start the run that continues (agui.Turn).
//
// The events stream is seed 004's: `id:` on every frame, `: keep-alive`
// comments, resumable with Last-Event-ID or ?after=, following later runs
// (agui.NewThreadExchange). What the input means is the agui package's;
// what it does to the thread is the run service's; this translates HTTP.

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/agui"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
)

func (s *Server) aguiRun(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	in, err := agui.DecodeRunAgentInput(body)
	if err != nil {
		return err
	}
	stream := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	if len(in.Resume) == 0 {
		// CopilotKit answers an on_interrupt event with forwardedProps.command.
		entry, ok, err := in.CommandResume()
		if err != nil {
			return err
		}
		if ok {
			if entry.InterruptID == "" && in.ThreadID != "" {
				if entry.InterruptID, err = s.openInterrupt(r, in.ThreadID); err != nil {
					return err
				}
			}
			in.Resume = []agui.ResumeEntry{entry}
		}
	}
	if len(in.Resume) > 0 {
		return s.aguiResume(w, r, in, stream)
	}
	ctx, sc := r.Context(), scopeOf(r.Context())
	turn, err := in.Turn(s.serverTool)
	if err != nil {
		return err
	}
	k, err := s.idempotency(r, body) // idempotency.go
	if err != nil {
		return err
	}
	defer s.unsettled(r, &k)
	if k.runID != "" && stream {
		return s.attach(w, r, k, agui.NewRunExchange(in))
	}
	if k.runID != "" {
		// The same 202 as the first answer: still queued if its run waits.
		prior, err := s.runs.Get(ctx, sc, k.runID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		writeJSON(w, http.StatusAccepted, accepted{TaskID: k.runID, ThreadID: cmp.Or(in.ThreadID, k.convID), RunID: cmp.Or(in.RunID, k.runID),
			Queued: err == nil && prior.Status == chat.RunQueued})
		return nil
	}
	if err := s.checkEngine("forwardedProps.engine", turn.Engine); err != nil {
		return err
	}
	req := run.StartRequest{ClientRunID: in.RunID, Structured: true, Input: turn.Input, Parts: turn.Parts, ToolAnswers: turn.ToolAnswers,
		FrontendTools: turn.FrontendTools, Context: turn.Context, Engine: turn.Engine, AgentID: turn.Agent.ID, AgentVersion: turn.Agent.Version,
		State: turn.State, Multitask: turn.Multitask}
	if in.ThreadID != "" {
		id, exists, err := s.runs.ClientConversation(ctx, sc, in.ThreadID)
		if err != nil {
			return err
		}
		if exists {
			req.ConversationID = id
		} else {
			req.CreateWithID = id
		}
	}
	if req.ConversationID != "" && len(req.ToolAnswers) == 0 {
		// A history that leaves the stored branch edits it there.
		sent := make([]run.SentMessage, len(in.Messages))
		for i, m := range in.Messages {
			sent[i] = run.SentMessage{ID: m.ID, Role: m.Role, Text: m.Text()}
		}
		if req.ParentID, err = s.runs.Diverged(ctx, sc, req.ConversationID, sent); err != nil {
			return toAPIError(err, errcode.ThreadNotFound, "thread")
		}
		// A history that ends at a question already asked asks for its
		// answer again: a sibling of the answer it dropped.
		if req.ParentID == nil {
			if req.Regenerates, err = s.runs.AskedAgain(ctx, sc, req.ConversationID, sent); err != nil {
				return toAPIError(err, errcode.ThreadNotFound, "thread")
			}
		}
	}
	started, err := s.runs.Start(ctx, sc, req, stream)
	s.settle(r, &k, started.Run, err)
	switch {
	case errors.Is(err, run.ErrNoPendingToolCall):
		return apiErr(http.StatusUnprocessableEntity, errcode.NoPendingToolCall, "the input ends with tool messages, but none answers a tool call the thread is waiting for")
	case errors.Is(err, store.ErrConflict) && !store.IsBusy(err):
		return apiErr(http.StatusConflict, errcode.Conflict, "the thread changed while the run was starting; try again")
	case err != nil:
		return toAPIError(err, errcode.ThreadNotFound, "thread")
	}
	if !stream {
		writeJSON(w, http.StatusAccepted, accepted{TaskID: started.Run.ID, ThreadID: cmp.Or(in.ThreadID, started.Conversation.ID),
			RunID: cmp.Or(in.RunID, started.Run.ID), Created: started.Created, Queued: started.Queued})
		return nil
	}
	s.serveStream(w, r, started.Stream, agui.NewRunExchange(in))
	return nil
}

// accepted is seed 001's answer to a run started without a stream.
type accepted struct {
	TaskID   string `json:"taskId"`   // the run's id (GET /v1/agent/runs/{taskId})
	ThreadID string `json:"threadId"` // the conversation
	RunID    string `json:"runId"`    // the AG-UI runId the run's events carry
	Created  bool   `json:"created"`  // this request created the thread
	// Queued: the input waits behind the thread's active run
	// (forwardedProps.multitaskStrategy enqueue); its run starts after.
	Queued bool `json:"queued,omitempty"`
}

// serverTool reports whether the server has a tool of that name: it wins
// over a frontend tool of the same name.
func (s *Server) serverTool(name string) bool {
	if s.tools == nil {
		return false
	}
	_, ok := s.tools.Get(name)
	return ok
}

// aguiResume decides the interrupts the input answers and streams (or
// acknowledges) the continuation.
func (s *Server) aguiResume(w http.ResponseWriter, r *http.Request, in agui.RunAgentInput, stream bool) error {
	ctx, sc := r.Context(), scopeOf(r.Context())
	if in.ThreadID == "" {
		return apiErr(http.StatusUnprocessableEntity, errcode.InvalidInput, "field \"threadId\" is required with \"resume\"")
	}
	thread, err := s.clientThread(ctx, sc, in.ThreadID)
	if err != nil {
		return err
	}
	answers, err := in.Replies()
	if err != nil {
		return err
	}
	replies := make([]run.Reply, len(answers))
	for i, a := range answers {
		replies[i] = run.Reply{ConfirmationID: a.InterruptID, Decision: a.Decision, ExpiredOK: a.Cancelled}
	}
	if in.RunID == "" {
		in.RunID = chat.NewID() // the continuation is named here, so the 202 can tell it
	}
	c, err := s.runs.Continue(ctx, sc, thread, replies, in.RunID)
	var re *run.ReplyError
	switch {
	case errors.Is(err, run.ErrRunsMixed):
		return apiErr(http.StatusUnprocessableEntity, errcode.InvalidResume, "the interrupts one input answers must belong to one run")
	case errors.Is(err, store.ErrRunEnded):
		return apiErr(http.StatusConflict, errcode.InterruptRunEnded, "the run this interrupt belongs to has ended; nothing will run")
	case errors.As(err, &re) && errors.Is(err, store.ErrConflict):
		return &Error{Status: http.StatusConflict, Code: errcode.InterruptAlreadyResolved, Message: "this interrupt was already decided: " + re.Confirmation.Status,
			Extra: map[string]any{"interruptId": re.Confirmation.ID, "status": re.Confirmation.Status}}
	case errors.Is(err, store.ErrExpired):
		return apiErr(http.StatusGone, errcode.InterruptExpired, "this interrupt expired before it was answered; cancel it to continue the thread")
	case err != nil:
		return toAPIError(err, errcode.InterruptNotFound, "interrupt")
	}
	if !stream {
		writeJSON(w, http.StatusAccepted, accepted{TaskID: c.RunID, ThreadID: in.ThreadID, RunID: in.RunID})
		return nil
	}
	wait, err := s.runs.WaitOf(ctx, sc, c.RunID, c.Decided[0].ID)
	if err != nil {
		return runErr(err)
	}
	st, err := s.runs.Follow(ctx, sc, "", c.RunID, wait.At)
	if err != nil {
		return runErr(err)
	}
	s.serveStream(w, r, st, agui.NewContinuation(in, wait.Before))
	return nil
}

// openInterrupt is the id of the confirmation a thread waits for, the
// oldest when several are open: the one a resume that names none answers.
func (s *Server) openInterrupt(r *http.Request, name string) (string, error) {
	ctx, sc := r.Context(), scopeOf(r.Context())
	thread, err := s.clientThread(ctx, sc, name)
	if err != nil {
		return "", err
	}
	pending, err := s.runs.Confirmations(ctx, sc, chat.ConfirmPending)
	if err != nil {
		return "", err
	}
	var open *chat.Confirmation
	for i, c := range pending {
		if c.ConversationID == thread && (open == nil || c.CreatedAt.Before(open.CreatedAt)) {
			open = &pending[i]
		}
	}
	if open == nil {
		return "", apiErr(http.StatusNotFound, errcode.InterruptNotFound, "forwardedProps.command.resume answers an interrupt, but no confirmation is waiting in this thread")
	}
	return open.ID, nil
}

// aguiEvents streams a thread's AG-UI events in seed mode. With
// ?snapshot=messages (and no resume position) it loads and follows in one
// request: the thread's messages as they are now (and its shared state,
// when it has one), then the events after. ?protocolVersion= names the AG-UI
// version the reader speaks (default 1.0; "0.0.59" for a client before 1.0,
// whose schemas refuse 1.0's cancelled outcome).
func (s *Server) aguiEvents(w http.ResponseWriter, r *http.Request) error {
	at, err := lastEventID(r)
	if err != nil {
		return err
	}
	ctx, sc, name := r.Context(), scopeOf(r.Context()), r.PathValue("threadId")
	thread, err := s.clientThread(ctx, sc, name)
	if err != nil {
		return err
	}
	var snapshot []chat.Message
	var state json.RawMessage
	withSnapshot := r.URL.Query().Get("snapshot") == "messages" && at == (dialect.ID{})
	if withSnapshot {
		var last int64
		if snapshot, last, err = s.runs.Snapshot(ctx, sc, thread); err != nil {
			return toAPIError(err, errcode.ThreadNotFound, "thread")
		}
		if state, err = s.runs.ThreadState(ctx, sc, thread); err != nil {
			return toAPIError(err, errcode.ThreadNotFound, "thread")
		}
		at = dialect.ID{Seq: last}
	}
	st, err := s.runs.Follow(ctx, sc, thread, "", at.Replay())
	if err != nil {
		return toAPIError(err, errcode.ThreadNotFound, "thread")
	}
	x := agui.NewThreadExchange(name, agui.PreV1(cmp.Or(r.URL.Query().Get("protocolVersion"), "1")), nil)
	if withSnapshot {
		// The snapshot is the thread as of its seq, and its frame's id is
		// that seq: the events follow as they would after that id.
		x.WithSnapshot(snapshot, at.Seq, time.Now())
		if state != nil {
			x.WithState(state, time.Now())
		}
	}
	s.resume(ctx, st, x, at, true)
	s.serveStream(w, r, st, x)
	return nil
}

// aguiHistory serves GET /api/v1/agent/history?threadId=…&before=YYYY-MM-DD
// (seed 001 §4): one day of a thread's messages (agui.PickDay), days cut in
// Config.HistoryLocation.
func (s *Server) aguiHistory(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	name, before := q.Get("threadId"), q.Get("before")
	if name == "" {
		return apiErr(http.StatusBadRequest, errcode.MissingThreadID, "the threadId query parameter is required")
	}
	if before != "" {
		if _, err := time.Parse(agui.DayLayout, before); err != nil {
			return apiErr(http.StatusBadRequest, errcode.InvalidBefore, "before must be a date like 2026-03-16")
		}
	}
	ctx, sc := r.Context(), scopeOf(r.Context())
	thread, err := s.clientThread(ctx, sc, name)
	if err != nil {
		return err
	}
	var day agui.HistoryDay
	h, err := s.runs.History(ctx, sc, thread, func(msgs []chat.Message) []chat.Message {
		day = agui.PickDay(msgs, before, s.historyLoc)
		return day.Messages
	})
	if err != nil {
		return err
	}
	day.Messages = h.Messages
	writeJSON(w, http.StatusOK, agui.NewHistory(name, day, h.Point, s.historyLoc, h.Events))
	return nil
}
