package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
)

// Steering is what conversations people steer need stored: the active
// branch of the message tree (steering.go in each backend).
//
// The tree itself is kept by AppendMessage and StartRun: a message appended
// with no ParentID follows the latest message of its run, or, for a run's
// first message, the run's ParentID; a message of no run follows the
// conversation's active leaf. The active leaf moves to the new message when
// it was the message's parent, so a run goes on writing its own branch when
// a person switched to another meanwhile.
type Steering interface {
	// SetActiveLeaf makes messageID, a message of the conversation, its
	// active leaf; ErrNotFound when either is not sc's.
	SetActiveLeaf(ctx context.Context, sc chat.Scope, conversationID, messageID string) error

	// ClaimIdempotencyKey records k as sc's, unless sc holds k.Key already
	// since since (a key older than that is replaced): then it returns the
	// stored record and false. Of racing claims exactly one gets true.
	ClaimIdempotencyKey(ctx context.Context, sc chat.Scope, k IdempotencyKey, since time.Time) (IdempotencyKey, bool, error)
	// SetIdempotencyRun records the run (and its conversation) that sc's
	// key started.
	SetIdempotencyRun(ctx context.Context, sc chat.Scope, key, runID, conversationID string) error
	// ReleaseIdempotencyKey drops sc's claim of key that started no run
	// (the start failed), so the request may be tried again.
	ReleaseIdempotencyKey(ctx context.Context, sc chat.Scope, key string) error

	// PutFeedback records sc's rating of a message of one of sc's
	// conversations (replacing an earlier one; RunID and AgentID are
	// filled in from the message); ErrNotFound when the message is not sc's.
	PutFeedback(ctx context.Context, sc chat.Scope, f chat.Feedback) (chat.Feedback, error)
	// DeleteFeedback withdraws sc's rating of a message; ErrNotFound when there is none.
	DeleteFeedback(ctx context.Context, sc chat.Scope, messageID string) error
	// ConversationFeedback lists sc's ratings in one of sc's conversations.
	ConversationFeedback(ctx context.Context, sc chat.Scope, conversationID string) ([]chat.Feedback, error)
	// ListFeedback pages a tenant's ratings, newest first, for its admins.
	ListFeedback(ctx context.Context, tenant string, f FeedbackFilter, p Page) ([]chat.Feedback, string, error)

	// ThreadState is the shared state (AG-UI RunAgentInput.state) of one of
	// sc's conversations, as stored, byte for byte; nil when it has none.
	// ErrNotFound when the conversation is not sc's.
	ThreadState(ctx context.Context, sc chat.Scope, conversationID string) (json.RawMessage, error)
	// SetThreadState replaces the shared state of one of sc's conversations
	// (nil clears it); ErrNotFound when the conversation is not sc's.
	SetThreadState(ctx context.Context, sc chat.Scope, conversationID string, state json.RawMessage) error

	// EnqueueInput stores an input waiting for the active run of one of
	// sc's conversations to end (multitaskStrategy enqueue); ID and
	// CreatedAt are set when empty, and a given pair keeps its place in the
	// order (an input put back). ErrNotFound when the conversation is not sc's.
	EnqueueInput(ctx context.Context, sc chat.Scope, q QueuedInput) (QueuedInput, error)
	// TakeQueuedInput removes and returns the conversation's oldest queued
	// input (created_at, then id), for the system to start, if the
	// conversation has no active run; ErrNotFound when none waits or a run
	// is active (an input behind a run stays queued, so a client reading it
	// by id still finds it; the run's end takes it). Of racing takers
	// exactly one gets each input.
	TakeQueuedInput(ctx context.Context, tenant, conversationID string) (QueuedInput, error)
	// StalledQueues lists conversations, oldest queued input first, that
	// have queued inputs and no active run: inputs whose wake-up was lost
	// (the replica that ended the run died first).
	StalledQueues(ctx context.Context, limit int) ([]QueuedInput, error)
	// QueuedInputs lists the inputs queued in one of sc's conversations, in
	// the order they start (created_at, then id); ErrNotFound when the
	// conversation is not sc's.
	QueuedInputs(ctx context.Context, sc chat.Scope, conversationID string) ([]QueuedInput, error)
	// GetQueuedInput is one of sc's queued inputs; ErrNotFound when it is
	// not sc's or no longer queued (taken, or deleted).
	GetQueuedInput(ctx context.Context, sc chat.Scope, id string) (QueuedInput, error)
	// DeleteQueuedInput removes one of sc's queued inputs, so it never
	// starts; ErrNotFound when it is not sc's or no longer queued. Of a
	// delete racing a take exactly one wins.
	DeleteQueuedInput(ctx context.Context, sc chat.Scope, id string) error
}

// QueuedInput is an input waiting behind its conversation's active run.
type QueuedInput struct {
	ID             string
	Tenant         string
	Owner          string
	ConversationID string
	// Request is what starts its run, as the run service wrote it.
	Request   json.RawMessage
	CreatedAt time.Time
}

// FeedbackFilter narrows ListFeedback.
type FeedbackFilter struct {
	Rating  string
	AgentID string
	// Since keeps ratings given or changed at or after it (zero: all).
	Since time.Time
}

// IdempotencyKey is the record of a run-starting request's Idempotency-Key.
type IdempotencyKey struct {
	Key string
	// BodyHash identifies the request the key first came with.
	BodyHash string
	// RunID and ConversationID are what it started; empty while starting.
	RunID          string
	ConversationID string
	CreatedAt      time.Time
}
