package run

import (
	"context"
	"errors"

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
//   - enqueue is refused here as reject is: queued inputs are not built yet.
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
