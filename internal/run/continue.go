package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// ErrRunsMixed: the decisions of one request belong to more than one run.
var ErrRunsMixed = errors.New("the decisions belong to different runs")

// Reply is a client's decision on one of a thread's confirmations.
type Reply struct {
	ConfirmationID string
	Decision       chat.Decision
	// ExpiredOK accepts a confirmation that expired before the decision:
	// the run learns of the expiry and ends by itself, and the client
	// follows it there.
	ExpiredOK bool
}

// ReplyError is a reply Continue refused. Err is store.ErrNotFound (no
// such confirmation in the thread), store.ErrRunEnded (its run ended;
// nothing would run), store.ErrConflict (decided before: Confirmation holds
// that decision) or store.ErrExpired.
type ReplyError struct {
	Reply        int
	Confirmation chat.Confirmation
	Err          error
}

func (e *ReplyError) Error() string {
	return fmt.Sprintf("reply %d (confirmation %s): %v", e.Reply, e.Confirmation.ID, e.Err)
}

func (e *ReplyError) Unwrap() error { return e.Err }

// Continuation is a paused run that decisions continue.
type Continuation struct {
	RunID string
	// Decided are the confirmations decided, in the replies' order.
	Decided []chat.Confirmation
}

// Continue applies replies, each on a confirmation of thread, all of one
// run, and continues that run (Decide). clientRunID names the continuation
// for a client that chooses run ids (AG-UI), "" for none. Every
// confirmation is looked up before any is decided, so a reply naming
// another thread's confirmation decides nothing.
func (s *Service) Continue(ctx context.Context, sc chat.Scope, thread string, replies []Reply, clientRunID string) (Continuation, error) {
	if len(replies) == 0 {
		return Continuation{}, invalidInput("no decision to continue with")
	}
	var out Continuation
	for i, r := range replies {
		c, err := s.st.GetConfirmation(ctx, sc, r.ConfirmationID)
		if err == nil && c.ConversationID != thread {
			err = fmt.Errorf("confirmation %s is another thread's: %w", r.ConfirmationID, store.ErrNotFound)
		}
		if err != nil {
			return Continuation{}, &ReplyError{Reply: i, Confirmation: chat.Confirmation{ID: r.ConfirmationID}, Err: err}
		}
		if out.RunID != "" && c.RunID != out.RunID {
			return Continuation{}, ErrRunsMixed
		}
		out.RunID = c.RunID
		out.Decided = append(out.Decided, c)
	}
	for i, r := range replies {
		c, err := s.DecideFor(ctx, sc, r.ConfirmationID, r.Decision, clientRunID)
		switch {
		case errors.Is(err, store.ErrExpired) && r.ExpiredOK:
		case err != nil:
			return Continuation{}, &ReplyError{Reply: i, Confirmation: c, Err: err}
		default:
			out.Decided[i] = c
		}
	}
	return out, nil
}

// Wait is where a run waited for a confirmation, read from its timeline.
type Wait struct {
	// Before are the run's events up to and including the announcement of
	// the wait (none when the run never announced it).
	Before []event.Event
	// At is the seq of that announcement, 0 when there is none.
	At int64
	// Resumed is the seq after which the run's continuation begins: just
	// before the run.resumed that follows the wait, or, while the run has
	// not resumed yet, after its last event.
	Resumed int64
}

// WaitOf finds where run waited for confirmation.
func (s *Service) WaitOf(ctx context.Context, sc chat.Scope, runID, confirmationID string) (Wait, error) {
	_, evs, err := s.Timeline(ctx, sc, runID)
	if err != nil {
		return Wait{}, err
	}
	var w Wait
	waited := -1
	for i, ev := range evs {
		switch p := ev.Payload.(type) {
		case event.ToolAwaitingData:
			if p.ConfirmationID == confirmationID && waited < 0 {
				waited, w.At, w.Before = i, ev.Seq, evs[:i+1]
			}
		case event.RunResumedData:
			if waited >= 0 && w.Resumed == 0 {
				w.Resumed = ev.Seq - 1
			}
		}
	}
	if w.Resumed == 0 && len(evs) > 0 {
		w.Resumed = evs[len(evs)-1].Seq
	}
	return w, nil
}
