// Package store defines the persistence seam of agentchat: conversations,
// messages, runs, the per-thread event log and tool confirmations.
//
// Security invariant: every method that reads or changes a tenant's data takes
// a Scope, and a backend never returns or touches a row outside it. A row of
// another tenant or owner is indistinguishable from a missing one: ErrNotFound.
//
// Backends (sqlitestore, pgstore) map their driver errors to the sentinel
// errors below in one place and pass the storetest contract suite unchanged.
// All methods are safe for concurrent use.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentchat/agentchat/internal/event"
)

// Sentinel errors. Backends wrap them with context; callers test with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	// ErrConflict: a uniqueness or state rule refused the write.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: the database cannot be reached now; the caller may retry.
	ErrUnavailable = errors.New("store unavailable")
)

// BusyError is returned by CreateRun when the conversation already has an
// active run. It wraps ErrConflict.
type BusyError struct{ ActiveRunID string }

func (e *BusyError) Error() string { return "conversation has an active run " + e.ActiveRunID }
func (e *BusyError) Unwrap() error { return ErrConflict }

// Scope is the principal a query acts for: a tenant and a user in it.
type Scope struct {
	Tenant string
	User   string
}

// Page asks for one page of a list. Cursor is opaque and comes from a
// previous page's Next; Limit is already clamped by the caller.
type Page struct {
	Limit  int
	Cursor string
}

// Conversation is a thread of messages and runs.
type Conversation struct {
	ID        string
	Tenant    string
	Owner     string
	Title     string
	Engine    string // pinned engine, empty for the default
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleSystem    = "system"
)

// Message is one stored message of a conversation.
type Message struct {
	ID             string
	ConversationID string
	Role           string
	Content        string
	// Parts holds multi-part content (text and image URLs) as JSON, nil when plain text.
	Parts json.RawMessage
	// Metadata is structured data about the message (tool calls, tool results, partial marks).
	Metadata json.RawMessage
	RunID    string
	// ToolName and ToolCallID index tool messages (seed 002 persistence).
	ToolName   string
	ToolCallID string
	CreatedAt  time.Time
}

// MessageFilter narrows ListMessages.
type MessageFilter struct {
	ToolName string
	RunID    string
}

// Run statuses. A run is active while queued, running or awaiting_input.
const (
	RunQueued        = "queued"
	RunRunning       = "running"
	RunAwaitingInput = "awaiting_input"
	RunSucceeded     = event.StatusSucceeded
	RunFailed        = event.StatusFailed
	RunCancelled     = event.StatusCancelled
)

// Active reports whether a run in status s still holds its conversation.
func Active(status string) bool {
	return status == RunQueued || status == RunRunning || status == RunAwaitingInput
}

// Run is one execution of the agent for one user input.
type Run struct {
	ID             string
	Tenant         string
	Owner          string
	ConversationID string
	TurnID         string
	Status         string
	Input          string
	Engine         string
	Model          string
	Error          *event.ErrorInfo
	Usage          event.Usage
	// State is the engine's resumable state (e.g. the pending tool calls of a
	// run awaiting input), opaque to the store.
	State     json.RawMessage
	CreatedAt time.Time
	StartedAt time.Time
	EndedAt   *time.Time
	// LeaseOwner and LeaseUntil say which process executes the run, for scale-out.
	LeaseOwner string
	LeaseUntil time.Time
	// CancelRequested records that someone asked to stop the run. It is the
	// durable form of the cancel control message: an executor that missed the
	// message sees it when it renews its lease.
	CancelRequested bool
}

// RunUpdate changes a run's status and what goes with it. Nil fields are kept.
type RunUpdate struct {
	Status  string
	Error   *event.ErrorInfo
	Usage   *event.Usage
	Model   *string
	State   json.RawMessage
	EndedAt *time.Time
	// CancelRequested, when true, sets the run's CancelRequested (it is never cleared).
	CancelRequested bool
	// From, when set, makes the update conditional on the current status being
	// one of these (a compare-and-set); otherwise ErrConflict.
	From []string
}

// RunStart is what StartRun writes.
type RunStart struct {
	// NewConversation, when set, is created first and Run goes into it;
	// otherwise Run.ConversationID names an existing conversation.
	NewConversation *Conversation
	Run             Run
	// Message is the run's user message (ConversationID and RunID are filled in).
	Message Message
}

// RunStarted is what StartRun wrote, and the thread's last seq before the run.
type RunStarted struct {
	Conversation Conversation
	Run          Run
	Message      Message
	LastSeq      int64
}

// StartRunSeparately implements StartRun with one call per part, for
// backends whose writers do not queue behind one another.
func StartRunSeparately(ctx context.Context, st Store, sc Scope, in RunStart) (RunStarted, error) {
	var out RunStarted
	var err error
	if in.NewConversation != nil {
		if out.Conversation, err = st.CreateConversation(ctx, sc, *in.NewConversation); err != nil {
			return out, err
		}
		in.Run.ConversationID = out.Conversation.ID
	} else if out.Conversation, err = st.GetConversation(ctx, sc, in.Run.ConversationID); err != nil {
		return out, err
	}
	if out.Run, err = st.CreateRun(ctx, sc, in.Run); err != nil {
		return out, err
	}
	if out.LastSeq, err = st.LastSeq(ctx, sc.Tenant, out.Conversation.ID); err != nil {
		return out, err
	}
	in.Message.ConversationID, in.Message.RunID = out.Conversation.ID, out.Run.ID
	out.Message, err = st.AppendMessage(ctx, sc, in.Message)
	return out, err
}

// Confirmation statuses.
const (
	ConfirmPending  = "pending"
	ConfirmApproved = "approved"
	ConfirmRejected = "rejected"
	ConfirmExpired  = "expired"
)

// Confirmation is a tool call waiting for, or decided by, a person.
type Confirmation struct {
	ID             string
	Tenant         string
	Owner          string
	RunID          string
	ConversationID string
	ToolCallID     string
	ToolName       string
	Args           json.RawMessage
	Status         string
	// DecidedArgs are the arguments a person edited before approving; nil if unchanged.
	DecidedArgs json.RawMessage
	Reason      string
	CreatedAt   time.Time
	ExpiresAt   time.Time
	DecidedAt   *time.Time
	// AppliedAt is when the run continued with this decision (ClaimRun); nil
	// until then. A decided confirmation not yet applied to a run awaiting
	// input is work left undone (UnappliedDecisions).
	AppliedAt *time.Time
}

// Decision is a person's answer to a confirmation.
type Decision struct {
	Status string // ConfirmApproved or ConfirmRejected (ConfirmExpired by the system)
	Args   json.RawMessage
	Reason string
	At     time.Time
}

// Store is everything agentchat persists. It is deliberately wide: one seam,
// owned here, with one contract suite (storetest).
type Store interface {
	// Knowledge: retrieval, memory, blobs and compaction (knowledge.go).
	Knowledge

	// Conversations.
	CreateConversation(ctx context.Context, s Scope, c Conversation) (Conversation, error)
	GetConversation(ctx context.Context, s Scope, id string) (Conversation, error)
	// ListConversations returns newest UpdatedAt first (ties by id, descending) and the next cursor ("" at the end).
	ListConversations(ctx context.Context, s Scope, p Page) ([]Conversation, string, error)
	UpdateConversation(ctx context.Context, s Scope, id string, title *string, engine *string) (Conversation, error)
	// DeleteConversation removes the conversation with its messages, runs, events and confirmations.
	DeleteConversation(ctx context.Context, s Scope, id string) error

	// Messages. AppendMessage sets ID and CreatedAt when empty and bumps the conversation's UpdatedAt.
	AppendMessage(ctx context.Context, s Scope, m Message) (Message, error)
	// ListMessages returns oldest CreatedAt first (ties by id) and the next cursor.
	ListMessages(ctx context.Context, s Scope, conversationID string, f MessageFilter, p Page) ([]Message, string, error)

	// StartRun writes everything a new run needs before it executes (the
	// conversation when new, the run, the user message) and reads the
	// thread's last seq, in as few round trips as the backend allows. It
	// fails like CreateConversation, CreateRun and AppendMessage.
	StartRun(ctx context.Context, s Scope, in RunStart) (RunStarted, error)

	// Runs. CreateRun fails with *BusyError when the conversation has an active run.
	CreateRun(ctx context.Context, s Scope, r Run) (Run, error)
	GetRun(ctx context.Context, s Scope, id string) (Run, error)
	// GetRunAnyOwner reads a run by id for the system (lease takeover, confirmations
	// expiring); never use it to answer a request.
	GetRunAnyOwner(ctx context.Context, tenant, id string) (Run, error)
	UpdateRun(ctx context.Context, tenant, id string, u RunUpdate) (Run, error)
	// ActiveRun returns the conversation's active run or ErrNotFound.
	ActiveRun(ctx context.Context, s Scope, conversationID string) (Run, error)
	// ListRuns lists a conversation's runs, oldest first.
	ListRuns(ctx context.Context, s Scope, conversationID string) ([]Run, error)
	// AcquireLease makes owner the executor of the run until until, if the run
	// is active and its lease is free, expired or already owner's. It reports
	// whether the lease was taken.
	AcquireLease(ctx context.Context, tenant, runID, owner string, until time.Time) (bool, error)
	// ExpiredLeases lists queued or running runs whose lease ended before
	// now, oldest lease first. Runs awaiting input need no executor and are
	// not listed (however many there are, they never hide abandoned runs).
	ExpiredLeases(ctx context.Context, now time.Time, limit int) ([]Run, error)
	// ClaimRun continues a run awaiting input: it becomes running, leased to
	// owner until until, in one atomic step, so exactly one of racing
	// claimers (on any replica) wins. With confirmationID set, the claim also
	// applies that decided confirmation of the run (sets its AppliedAt) and
	// requires it to be decided and not yet applied. A refused claim is
	// ErrConflict (ErrNotFound when the run does not exist).
	ClaimRun(ctx context.Context, tenant, runID, confirmationID, owner string, until time.Time) (Run, error)
	// DeleteRunsEndedBefore removes finished runs (and their events) older than t; it returns how many.
	DeleteRunsEndedBefore(ctx context.Context, t time.Time) (int, error)

	// Event log. AppendEvents stores events in order; (thread, seq) is unique
	// and a duplicate is ErrConflict. Batches may span threads.
	AppendEvents(ctx context.Context, evs []event.Event) error
	// ListEvents returns the thread's events with afterSeq < seq <= untilSeq
	// (untilSeq 0: no upper bound), ascending, at most limit (0: no limit).
	// runID, when set, keeps only that run's events.
	ListEvents(ctx context.Context, s Scope, thread, runID string, afterSeq, untilSeq int64, limit int) ([]event.Event, error)
	// LastSeq is the thread's highest stored seq, 0 when it has none.
	LastSeq(ctx context.Context, tenant, thread string) (int64, error)

	// Confirmations.
	CreateConfirmation(ctx context.Context, c Confirmation) (Confirmation, error)
	GetConfirmation(ctx context.Context, s Scope, id string) (Confirmation, error)
	// DecideConfirmation records d if the confirmation is pending and not expired
	// at d.At. Repeating the decision already recorded returns it unchanged; a
	// different one is ErrConflict (with the stored confirmation returned).
	DecideConfirmation(ctx context.Context, s Scope, id string, d Decision) (Confirmation, error)
	// ListConfirmations lists the principal's confirmations in a status ("" for all), newest first.
	ListConfirmations(ctx context.Context, s Scope, status string) ([]Confirmation, error)
	// ExpireConfirmations marks pending confirmations past their expiry as expired and returns them.
	ExpireConfirmations(ctx context.Context, now time.Time) ([]Confirmation, error)
	// UnappliedDecisions lists, across tenants, confirmations decided (or
	// expired) before decidedBefore and not yet applied, whose run still
	// awaits input: runs that a decision should have continued but that no
	// replica claimed (it died, or missed the news). Oldest decision first.
	UnappliedDecisions(ctx context.Context, decidedBefore time.Time, limit int) ([]Confirmation, error)

	// Ping reports whether the database answers.
	Ping(ctx context.Context) error
	Close() error
}

// More sentinels.
var (
	// ErrExpired: the confirmation's time to decide has passed.
	ErrExpired = errors.New("expired")
	// ErrBadCursor: a page cursor that no backend issued.
	ErrBadCursor = errors.New("invalid cursor")
)
