package run

import (
	"context"
	"errors"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/compaction"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// A new conversation's first run needs nothing stored to call its model: its
// context is the one message the request brings. Such a run executes while
// its start (conversation, run, user message) is written, so the model's
// first token does not wait for the store (issue 25: "keep the first
// token's path free of anything that can wait"). Nothing of the run is
// visible before its start is stored: the announcements it makes before
// the model answers are held and published, in order, once the start is
// stored; anything else it does that others could see (model output, a
// tool, a message or state written) waits for the start, and the writes it
// defers (engine.AfterStart: remembering the user's message) are made once
// the start is stored. A start that fails discards the run: its model call
// is cancelled, nothing it did was written or published, and the client
// gets the start's error as before.

// opening is an early run's wait for its start.
type opening struct {
	decided chan struct{} // closed once the start is stored or has failed
	// The rest is guarded by the execution's mu; stored may be read
	// without it once decided is closed.
	done, stored bool
	held         []heldEvent
	writes       []func() // engine.AfterStart's, run once the start is stored
}

// heldEvent is an event emitted before the run's start was stored.
type heldEvent struct {
	ctx context.Context
	ev  event.Event
}

// errStartFailed ends an early run whose start could not be stored.
var errStartFailed = errors.New("the run's start was not stored")

// early reports whether a start may execute its run while it is written:
// a new conversation whose context is the request's message alone, and no
// quota to check (a quota refusal must come before any model call).
func early(in *store.RunStart, again *chat.Message, extra []chat.Message) bool {
	return in.NewConversation != nil && in.Parent == nil && again == nil && len(extra) == 0 &&
		in.Message.Role == chat.RoleUser && len(in.Limits) == 0
}

// heldUntilStored are the events an early run may emit before its start is
// stored, because they come before the model's answer: they are held and
// published once it is. Any other event waits for the start.
func heldUntilStored(t event.Type) bool {
	switch t {
	case event.ConversationCreated, event.RunStarted, event.StateSnapshot, event.StepStarted, event.StepFinished, event.IterationStarted, event.Retrieval:
		return true
	}
	return false
}

// hold keeps ev when the run's start is not stored yet. It reports whether
// Emit should go on: false when ev was held, or the start failed. Called
// with x.mu held; it may release it while it waits.
func (x *execution) hold(ctx context.Context, ev event.Event) bool {
	o := x.opening
	switch {
	case o == nil:
		return true
	case o.done:
		return o.stored
	}
	t := ev.Type
	if t == "" {
		t = ev.Payload.EventType()
	}
	if heldUntilStored(t) {
		o.held = append(o.held, heldEvent{ctx: ctx, ev: ev})
		return false
	}
	x.mu.Unlock()
	<-o.decided
	x.mu.Lock()
	return o.stored
}

// started waits for the run's start and reports whether it was stored.
func (x *execution) started() bool {
	o := x.opening // set before the execution began, never changed
	if o == nil {
		return true
	}
	<-o.decided
	return o.stored
}

// deferWrite runs write once the run's start is stored (engine.AfterStart).
func (x *execution) deferWrite(write func()) {
	x.mu.Lock()
	o := x.opening
	if !o.done {
		o.writes = append(o.writes, write)
		x.mu.Unlock()
		return
	}
	x.mu.Unlock()
	if o.stored {
		write()
	}
}

// open publishes an early run once its start is stored: the thread's last
// seq and the run's reserved seqs are the store's, the events held so far
// are emitted in their order, then the writes deferred are made.
func (x *execution) open(last, reserved int64) {
	x.mu.Lock()
	o := x.opening
	x.seq, x.reserved = last, reserved
	o.done, o.stored = true, true
	for _, h := range o.held {
		x.emit(h.ctx, h.ev)
	}
	writes := o.writes
	o.held, o.writes = nil, nil
	x.mu.Unlock()
	close(o.decided)
	for _, write := range writes {
		write()
	}
}

// discard ends an early run whose start failed, and waits until it has:
// its model call is cancelled, nothing it emitted is published and nothing
// it deferred is written.
func (x *execution) discard() {
	x.mu.Lock()
	o := x.opening
	o.done = true
	o.held, o.writes = nil, nil
	x.mu.Unlock()
	close(o.decided)
	x.cancel(errStartFailed)
	<-x.done
}

// compactionDue reports whether a new conversation's first message alone
// exceeds the context limit, so that the run compacts before its model
// call (which needs its start stored).
func (s *Service) compactionDue(history []chat.Message) bool {
	c := s.cfg.Compactor
	if c == nil {
		return false
	}
	limit := c.ContextTokens()
	return limit > 0 && compaction.Estimate(compaction.Apply(history, store.Compaction{})) > limit
}
