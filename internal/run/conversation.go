package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/payload"
	"github.com/agentchat/agentchat/internal/store"
)

// Names clients choose for conversations (an AI SDK chat id, an AG-UI
// threadId) are the principal's own: a name means the principal's
// conversation with that id when there is one (a conversation the server
// named, whose id the client was told), else the conversation whose id is
// derived from the tenant, the user and the name (a name-based UUID). Two
// principals choosing one name never meet, none can squat a name for
// others, and a name says nothing about conversations of others. Every
// surface shares the namespace, so a chat id and a threadId of one
// principal that are equal name one conversation.

// clientNamespace is the UUID namespace of conversation ids derived from client names.
var clientNamespace = uuid.MustParse("5b0c6a56-2f0e-4c59-9f4e-2b7c8e4f6a10")

// ClientConversation returns the conversation a client-chosen name means
// for the principal, and whether it exists; when it does not, id is the one
// to create it with (StartRequest.CreateWithID).
func (s *Service) ClientConversation(ctx context.Context, sc chat.Scope, name string) (id string, exists bool, err error) {
	derived := uuid.NewSHA1(clientNamespace, []byte(sc.Tenant+"\x00"+sc.User+"\x00"+name)).String()
	for _, id := range []string{name, derived} {
		_, err := s.st.GetConversation(ctx, sc, id)
		if err == nil {
			return id, true, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", false, err
		}
	}
	return derived, false, nil
}

// ClientThread is the existing conversation a client-chosen name means, or
// store.ErrNotFound.
func (s *Service) ClientThread(ctx context.Context, sc chat.Scope, name string) (string, error) {
	id, exists, err := s.ClientConversation(ctx, sc, name)
	if err == nil && !exists {
		err = fmt.Errorf("thread %q: %w", name, store.ErrNotFound)
	}
	return id, err
}

// Active returns the conversation's run in progress, or store.ErrNotFound.
func (s *Service) Active(ctx context.Context, sc chat.Scope, conversationID string) (chat.Run, error) {
	return s.st.ActiveRun(ctx, sc, conversationID)
}

// DeleteConversation deletes a conversation with everything in it, first
// stopping its run in progress, which would otherwise go on writing into it.
func (s *Service) DeleteConversation(ctx context.Context, sc chat.Scope, id string) error {
	if active, err := s.st.ActiveRun(ctx, sc, id); err == nil {
		if _, err := s.Cancel(ctx, sc, active.ID); err != nil {
			return err
		}
	}
	if err := s.st.DeleteConversation(ctx, sc, id); err != nil {
		return err
	}
	if s.cfg.Files != nil {
		// The files only this conversation referenced go with it.
		if _, err := s.cfg.Files.Sweep(ctx, time.Now()); err != nil {
			s.log.WarnContext(ctx, "file sweep after deleting a conversation", "err", err)
		}
	}
	return nil
}

// HistoryRead is what a client loading a thread's stored messages needs to
// then follow its events without a gap or a run cut in two.
type HistoryRead struct {
	// Point is the seq to follow the thread's events after. It is read
	// before the messages, so a message that lands in between is in both
	// (clients merge by id) rather than in neither, and it is never inside
	// a run still going: the stream replays that run whole.
	Point int64
	// Messages are the messages picked, their large payloads resolved.
	Messages []chat.Message
	// Events are the events of the runs of Messages, in seq order; a run
	// whose events are gone (retention) is left out.
	Events []event.Event
}

// History reads a thread for a client that loads, then follows. pick
// chooses the messages the client gets (nil for all).
func (s *Service) History(ctx context.Context, sc chat.Scope, thread string, pick func([]chat.Message) []chat.Message) (HistoryRead, error) {
	var h HistoryRead
	var err error
	if h.Point, err = s.LastSeq(ctx, sc, thread); err != nil {
		return HistoryRead{}, err
	}
	if active, err := s.st.ActiveRun(ctx, sc, thread); err == nil {
		if first, err := s.st.ListEvents(ctx, sc, store.ListEventsParams{Thread: thread, RunID: active.ID, Limit: 1}); err == nil && len(first) > 0 && first[0].Seq <= h.Point {
			h.Point = first[0].Seq - 1
		}
	}
	msgs, err := s.activeMessages(ctx, sc, thread) // tree.go
	if err != nil {
		return HistoryRead{}, err
	}
	if pick != nil {
		msgs = pick(msgs)
	}
	h.Messages = payload.Resolve(ctx, s.st, sc, msgs)
	var runs []string
	for _, m := range h.Messages {
		if m.RunID != "" && !slices.Contains(runs, m.RunID) {
			runs = append(runs, m.RunID)
		}
	}
	for _, id := range runs {
		_, evs, err := s.Timeline(ctx, sc, id)
		if err != nil {
			s.log.WarnContext(ctx, "history: run events unavailable", "run_id", id, "err", err)
			continue
		}
		h.Events = append(h.Events, evs...)
	}
	slices.SortFunc(h.Events, func(a, b event.Event) int { return int(a.Seq - b.Seq) })
	return h, nil
}

// Snapshot reads a thread's stored messages as of its last event, for a
// client that loads and follows in one request: follow the thread after
// the returned seq. The seq is read first, so a message that lands in
// between is in both rather than in neither.
func (s *Service) Snapshot(ctx context.Context, sc chat.Scope, thread string) ([]chat.Message, int64, error) {
	last, err := s.LastSeq(ctx, sc, thread)
	if err != nil {
		return nil, 0, err
	}
	msgs, err := s.activeMessages(ctx, sc, thread) // tree.go
	return msgs, last, err
}

// RunUpTo returns the events of the thread's run that emitted seq, up to
// and including it: what a client resuming there has seen of that run.
// None when the log does not (yet) hold seq.
func (s *Service) RunUpTo(ctx context.Context, sc chat.Scope, thread string, seq int64) []event.Event {
	at, err := s.st.ListEvents(ctx, sc, store.ListEventsParams{Thread: thread, AfterSeq: seq - 1, UntilSeq: seq, Limit: 1})
	if err != nil || len(at) == 0 {
		return nil
	}
	_, evs, err := s.Timeline(ctx, sc, at[0].Run)
	if err != nil {
		return nil
	}
	end := 0
	for end < len(evs) && evs[end].Seq <= seq {
		end++
	}
	return evs[:end]
}

// NewConversation is a conversation to create.
type NewConversation struct {
	Title string
	// AgentID binds the conversation to an agent ("" for the tenant's
	// default); AgentVersion, when set, must be a version the principal
	// may run (the conversation still follows the published version).
	AgentID      string
	AgentVersion int
}

// CreateConversation creates an empty conversation of the principal, bound
// to its agent: every run in it is that agent's.
func (s *Service) CreateConversation(ctx context.Context, sc chat.Scope, nc NewConversation) (chat.Conversation, error) {
	ag, err := s.resolveAgent(ctx, sc, StartRequest{AgentID: nc.AgentID, AgentVersion: nc.AgentVersion})
	if err != nil {
		return chat.Conversation{}, err
	}
	c := chat.Conversation{Title: nc.Title}
	if ag != nil {
		c.AgentID = ag.ID
	}
	return s.st.CreateConversation(ctx, sc, c)
}

// Conversations lists the principal's conversations (bound to one agent,
// when agentID is set), one page at a time.
func (s *Service) Conversations(ctx context.Context, sc chat.Scope, agentID string, p store.Page) ([]chat.Conversation, string, error) {
	return s.st.ListConversations(ctx, sc, store.ConversationFilter{AgentID: agentID}, p)
}

// Conversation returns one of the principal's conversations.
func (s *Service) Conversation(ctx context.Context, sc chat.Scope, id string) (chat.Conversation, error) {
	return s.st.GetConversation(ctx, sc, id)
}

// RenameConversation sets a conversation's title.
func (s *Service) RenameConversation(ctx context.Context, sc chat.Scope, id, title string) (chat.Conversation, error) {
	return s.st.UpdateConversation(ctx, sc, id, &title, nil)
}
