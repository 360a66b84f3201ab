package httpapi

import (
	"cmp"
	"maps"
	"net/http"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect/chain"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/telemetry"
)

// chainStream serves GET and POST /v1/chain/stream (seed 003): it starts a
// chain and streams its envelopes, or, with Last-Event-ID (or run_id),
// attaches to the chain the request names and continues after that frame.
// Everything about the format is the chain dialect's; this translates HTTP.
func (s *Server) chainStream(w http.ResponseWriter, r *http.Request) error {
	req, err := s.chainRequest(r)
	if err != nil {
		return err
	}
	at, err := lastEventID(r)
	if err != nil {
		return err
	}
	if at.Part != 0 {
		// Every chain frame is an event of its own: no chain id has a part.
		return apiErr(http.StatusBadRequest, errcode.InvalidLastEventID, "Last-Event-ID must be a frame number this chain stream sent")
	}
	after := at.Seq
	ctx := r.Context()
	sc := scopeOf(ctx)
	if req.OverLimit(s.chainHardLimit) {
		if after > 0 {
			w.WriteHeader(http.StatusNoContent) // the client has the rejection: EventSource stops here
			return nil
		}
		maps.Copy(w.Header(), chain.Header())
		w.WriteHeader(http.StatusOK)
		// No run, so no run trace: the request's, else a fresh one.
		_, _ = w.Write(chain.Rejection(nil, req.Steps(), s.chainHardLimit, cmp.Or(telemetry.TraceID(ctx), chat.NewTraceID()), time.Now()))
		return nil
	}
	if req.RunID != "" || after > 0 {
		return s.chainAttach(w, r, sc, req, after)
	}
	started, err := s.runs.StartChain(ctx, sc, run.ChainRequest{Input: req.UserInput, MaxSteps: req.Steps(), ConversationID: req.ConversationID,
		AgentID: req.AgentID, AgentVersion: req.AgentVersion})
	if err != nil {
		return conversationErr(err)
	}
	w.Header().Set("X-Run-ID", started.Run.ID)
	w.Header().Set("X-Conversation-ID", started.Conversation.ID)
	s.serveStream(w, r, started.Stream, chain.NewEncoder(chain.Options{TraceID: started.Run.TraceID}))
	return nil
}

// chainAttach replays the named chain from its first event (the frame
// numbers are counted from there) and follows it live, writing the frames
// after `after`. A finished chain the client has every frame of answers
// 204, which tells an EventSource not to reconnect again.
func (s *Server) chainAttach(w http.ResponseWriter, r *http.Request, sc chat.Scope, req chain.Request, after int64) error {
	ctx := r.Context()
	var target chat.Run
	var err error
	if req.RunID != "" {
		target, err = s.runs.Get(ctx, sc, req.RunID)
	} else {
		target, err = s.runs.LatestChain(ctx, sc, req.ConversationID, req.AgentID, req.UserInput)
	}
	if err != nil {
		return runErr(err)
	}
	if !chat.Active(target.Status) && after > 0 {
		_, evs, err := s.runs.Timeline(ctx, sc, target.ID)
		if err != nil {
			return runErr(err)
		}
		if after >= chain.Count(evs) {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
	}
	st, err := s.runs.Follow(ctx, sc, "", target.ID, 0)
	if err != nil {
		return runErr(err)
	}
	w.Header().Set("X-Run-ID", target.ID)
	w.Header().Set("X-Conversation-ID", target.ConversationID)
	s.serveStream(w, r, st, chain.NewEncoder(chain.Options{After: after, TraceID: target.TraceID}))
	return nil
}

// chainRequest decodes the query (GET) or the JSON body (POST).
func (s *Server) chainRequest(r *http.Request) (chain.Request, error) {
	if r.Method != http.MethodPost {
		return chain.ParseQuery(r.URL.Query())
	}
	raw, err := readBody(r)
	if err != nil {
		return chain.Request{}, err
	}
	return chain.ParseBody(raw)
}
