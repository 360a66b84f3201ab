package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// Double-texting: a new input on a conversation whose run is still active
// follows the request's multitaskStrategy, else its agent's default, else
// reject (the store's *store.BusyError, 409 conversation_busy):
//
//   - interrupt cancels the active run, wherever it executes (the cancel
//     says why, so the run ends cancelled with code run_interrupted and its
//     partial answer is kept, marked interrupted), then starts the input's
//     run after it, on the branch the cancelled run wrote;
//   - rollback does the same, but the input's message follows what the
//     cancelled run's first message followed: the cancelled run's messages
//     leave the active branch and stay in the tree (?branch=all shows them);
//   - enqueue stores the input in the conversation's run queue (the store's
//     run_queue) with the id its run will have, and answers at once: the
//     Started is Queued, and its Stream, subscribed before the input was
//     stored, follows that run from its first event. Whichever replica ends
//     a run of the conversation takes the oldest queued input and starts
//     it (kickQueue); one whose start finds the conversation busy again goes
//     back in its place, and the sweep starts queues whose wake-up was lost
//     (sweepQueues). So inputs start one at a time, in order, on any replica.
//
// Cancel waits for the run's end (on any replica), so the start after it
// finds the conversation free unless another input took it meanwhile: then
// that one is the active run, and it is interrupted in turn, a few times
// at most.

// multitaskTries bounds how often one input interrupts runs that others
// started meanwhile before it gives up busy.
const multitaskTries = 3

func (s *Service) multitask(ctx context.Context, sc chat.Scope, req StartRequest, follow bool, busy *store.BusyError, busyErr error) (Started, error) {
	strategy := req.Multitask
	if strategy == "" {
		strategy = s.defaultStrategy(ctx, sc, req)
	}
	if strategy == chat.MultitaskEnqueue {
		return s.enqueue(ctx, sc, req, follow)
	}
	if strategy != chat.MultitaskInterrupt && strategy != chat.MultitaskRollback {
		return Started{}, busyErr
	}
	started, err := Started{}, busyErr
	for try := 0; try < multitaskTries && errors.As(err, &busy); try++ {
		active, gerr := s.st.GetRun(ctx, sc, busy.ActiveRunID)
		if gerr != nil && !errors.Is(gerr, store.ErrNotFound) {
			return Started{}, gerr
		}
		if gerr == nil && chat.Active(active.Status) {
			if _, cerr := s.cancelFor(ctx, sc, active.ID, bus.ReasonInterrupt); cerr != nil {
				return Started{}, cerr
			}
		}
		r := req
		if strategy == chat.MultitaskRollback && gerr == nil && r.Edits == "" && r.Regenerates == "" && r.ParentID == nil {
			parent := active.ParentID
			r.ParentID = &parent
		}
		started, err = s.start(ctx, sc, r, follow)
	}
	return started, err
}

// defaultStrategy is the multitask strategy of the agent that answers the
// conversation; "" (reject) without one.
func (s *Service) defaultStrategy(ctx context.Context, sc chat.Scope, req StartRequest) chat.MultitaskStrategy {
	ag, err := s.resolveAgent(ctx, sc, req)
	if err != nil || ag == nil {
		return ""
	}
	return ag.Multitask
}

// queuedStart is what the run queue keeps of an input: the request (with the
// run id its client was given) and the principal's role.
type queuedStart struct {
	Role    chat.Role
	Request StartRequest
}

// enqueue queues req behind the conversation's active run.
func (s *Service) enqueue(ctx context.Context, sc chat.Scope, req StartRequest, follow bool) (Started, error) {
	conv, err := s.st.GetConversation(ctx, sc, req.ConversationID)
	if err != nil {
		return Started{}, err
	}
	// What would refuse the start later is refused now, while the client
	// still listens: an input that cannot be one, an agent it cannot have.
	if !chat.ValidText(req.Input) || utf8.RuneCountInString(req.Input) > s.cfg.MaxInputChars ||
		strings.TrimSpace(req.Input) == "" && len(req.Parts) == 0 && len(req.ToolAnswers) == 0 && req.Regenerates == "" {
		return Started{}, invalidInput("the input cannot be queued: it is empty, too long, or not text")
	}
	if _, err := s.resolveAgent(ctx, sc, req); err != nil {
		return Started{}, err
	}
	req.RunID, req.Multitask, req.CreateWithID = chat.NewID(), "", ""
	b, err := json.Marshal(queuedStart{Role: sc.Role, Request: req})
	if err != nil {
		return Started{}, err
	}
	out := Started{Conversation: conv, Queued: true, Run: chat.Run{ID: req.RunID, Tenant: sc.Tenant, Owner: sc.User, ConversationID: conv.ID,
		Status: chat.RunQueued, Input: req.Input, Engine: req.Engine, CreatedAt: s.now()}}
	if follow {
		// Subscribed before the input is stored: its run cannot start unseen.
		last, err := s.st.LastSeq(ctx, sc.Tenant, conv.ID)
		if err != nil {
			return Started{}, err
		}
		q, err := s.bus.Subscribe(ctx, sc.Tenant, conv.ID, last)
		if err != nil {
			return Started{}, err
		}
		out.Stream = &Stream{s: s, sc: sc, thread: conv.ID, runID: req.RunID, q: q, last: last, queued: true}
	}
	// The queued input's id is its run's: the client reads and cancels it
	// by the id it was given (Get, Cancel) before the run exists.
	if _, err := s.st.EnqueueInput(ctx, sc, store.QueuedInput{ID: req.RunID, ConversationID: conv.ID, Request: b}); err != nil {
		if out.Stream != nil {
			out.Stream.Close()
		}
		return Started{}, err
	}
	s.kickQueue(sc.Tenant, conv.ID) // the active run may have ended meanwhile
	return out, nil
}

// kickQueue starts the conversation's oldest queued input, if it has one
// and no active run. The take runs on the caller's goroutine and only a
// taken input's start gets its own: almost every run ends with nothing
// queued, and a goroutine of its own for that one read, its stack grown by
// the SQLite driver, was a tenth of the read's cost.
func (s *Service) kickQueue(tenant, conversationID string) {
	if !s.admit() {
		return // shutting down: another replica's sweep, or the next start's, takes it
	}
	q, ok := s.takeQueued(tenant, conversationID)
	if !ok {
		s.release()
		return
	}
	go func() {
		defer s.release()
		s.startQueued(tenant, conversationID, q)
	}()
}

// takeQueued takes the conversation's oldest queued input. The take
// leaves an input behind an active run queued (its end kicks the queue
// again): a taken input is in neither the queue nor the runs until its
// start is stored, and a client reading it by id meanwhile would find
// nothing.
func (s *Service) takeQueued(tenant, conversationID string) (store.QueuedInput, bool) {
	q, err := s.st.TakeQueuedInput(s.ctx, tenant, conversationID)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) && s.ctx.Err() == nil {
			s.log.Warn("take a queued input", "conversation_id", conversationID, "err", err)
		}
		return q, false
	}
	return q, true
}

// startQueued starts q, a queued input taken from the conversation, and
// while an input is dropped, the next.
func (s *Service) startQueued(tenant, conversationID string, q store.QueuedInput) {
	for s.startTaken(conversationID, q) {
		var ok bool
		if q, ok = s.takeQueued(tenant, conversationID); !ok {
			return
		}
	}
}

// startTaken starts a taken input. One that finds the conversation busy
// goes back in its place (the active run's end kicks the queue again); one
// that cannot start at all is dropped and logged, and startTaken reports
// that the next should be tried.
func (s *Service) startTaken(conversationID string, q store.QueuedInput) (dropped bool) {
	ctx := s.ctx
	var qs queuedStart
	if err := json.Unmarshal(q.Request, &qs); err != nil {
		s.log.Error("a queued input could not be read; dropped", "conversation_id", conversationID, "queued_id", q.ID, "err", err)
		return true
	}
	sc := chat.Scope{Tenant: q.Tenant, User: q.Owner, Role: qs.Role}
	_, err := s.start(ctx, sc, qs.Request, false)
	var busy *store.BusyError
	switch {
	case errors.As(err, &busy) || errors.Is(err, ErrOverloaded) || errors.Is(err, ErrShuttingDown) || errors.Is(err, store.ErrUnavailable):
		if _, perr := s.st.EnqueueInput(context.WithoutCancel(ctx), sc, q); perr != nil {
			s.log.Error("put back a queued input; dropped", "conversation_id", conversationID, "run_id", qs.Request.RunID, "err", perr)
		}
		return false
	case err != nil:
		s.log.Error("a queued input could not start; dropped", "conversation_id", conversationID, "run_id", qs.Request.RunID, "err", err)
		return true
	}
	return false // its end starts the next
}

// sweepQueues starts queues whose wake-up was lost: inputs waiting in a
// conversation that has no active run.
func (s *Service) sweepQueues() {
	stalled, err := s.st.StalledQueues(s.ctx, 32)
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Warn("list stalled queues", "err", err)
		}
		return
	}
	for _, q := range stalled {
		if time.Since(q.CreatedAt) < time.Second {
			continue // just queued: its own kick is on the way
		}
		s.kickQueue(q.Tenant, q.ConversationID)
	}
}

// queuedRun is how a queued input shows as a run before it starts: status
// queued, with its input, conversation and the time it was queued.
func queuedRun(q store.QueuedInput) (chat.Run, error) {
	var qs queuedStart
	if err := json.Unmarshal(q.Request, &qs); err != nil {
		return chat.Run{}, fmt.Errorf("read queued input %s: %w", q.ID, err)
	}
	r := qs.Request
	return chat.Run{ID: q.ID, Tenant: q.Tenant, Owner: q.Owner, ConversationID: q.ConversationID, Status: chat.RunQueued,
		Input: r.Input, Engine: r.Engine, AgentID: r.AgentID, AgentVersion: r.AgentVersion,
		CreatedAt: q.CreatedAt, StartedAt: q.CreatedAt}, nil
}

// getQueued is one of sc's queued inputs as a run; store.ErrNotFound when
// it is not queued (any more).
func (s *Service) getQueued(ctx context.Context, sc chat.Scope, id string) (chat.Run, error) {
	q, err := s.st.GetQueuedInput(ctx, sc, id)
	if err != nil {
		return chat.Run{}, err
	}
	return queuedRun(q)
}

// Queue lists the inputs queued in one of sc's conversations, as runs
// (status queued), in the order they will start.
func (s *Service) Queue(ctx context.Context, sc chat.Scope, conversationID string) ([]chat.Run, error) {
	qs, err := s.st.QueuedInputs(ctx, sc, conversationID)
	if err != nil {
		return nil, err
	}
	out := make([]chat.Run, 0, len(qs))
	for _, q := range qs {
		r, err := queuedRun(q)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// cancelQueued removes one of sc's queued inputs so its run never starts,
// and answers it as a run ended cancelled. store.ErrNotFound when it is not
// queued: it has started (or ended) meanwhile, or never was.
func (s *Service) cancelQueued(ctx context.Context, sc chat.Scope, id string) (chat.Run, error) {
	r, err := s.getQueued(ctx, sc, id)
	if err != nil {
		return chat.Run{}, err
	}
	if err := s.st.DeleteQueuedInput(ctx, sc, id); err != nil {
		return chat.Run{}, err // taken to start: the caller cancels the run
	}
	now := s.now()
	r.Status, r.EndedAt = chat.RunCancelled, &now
	return r, nil
}
