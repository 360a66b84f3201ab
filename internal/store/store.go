package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
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

// IsBusy reports whether err is a conversation's active run refusing another.
func IsBusy(err error) bool {
	var busy *BusyError
	return errors.As(err, &busy)
}

// Page asks for one page of a list. Cursor is opaque and comes from a
// previous page's Next; Limit is already clamped by the caller.
type Page struct {
	Limit  int
	Cursor string
}

// ConversationFilter narrows ListConversations.
type ConversationFilter struct {
	// AgentID keeps the conversations bound to that agent.
	AgentID string
}

// MessageFilter narrows ListMessages.
type MessageFilter struct {
	ToolName string
	RunID    string
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
	NewConversation *chat.Conversation
	Run             chat.Run
	// Message is the run's user message (ConversationID and RunID are filled
	// in); a zero Message (no Role) writes none: the run answers Parent again.
	Message chat.Message
	// Parent, when set, is the message the run's first message follows (""
	// for a new first message: an edit of the first one), and the run's
	// branch becomes the conversation's active one; nil follows the active
	// leaf. The stored run's ParentID records it.
	Parent *string
	// MaxExecuting, when above zero, refuses the start with ErrTooManyRuns
	// if the tenant already has that many queued or running runs, counted
	// across every replica sharing the store.
	MaxExecuting int
	// ReserveSeqs, when above zero, sets the run's SeqReserved to the
	// thread's last seq plus this many.
	ReserveSeqs int64
	// Limits are the quotas the start must fit, checked in order under
	// the same lock as MaxExecuting; the first one reached refuses the
	// start with *QuotaError and nothing is written.
	Limits []Limit
}

// RunStarted is what StartRun wrote, and the thread's last seq before the run.
type RunStarted struct {
	Conversation chat.Conversation
	Run          chat.Run
	Message      chat.Message
	LastSeq      int64
}

// ClaimRunParams are the arguments of ClaimRun.
type ClaimRunParams struct {
	// Tenant and RunID name the run awaiting input.
	Tenant string
	RunID  string
	// ConfirmationID, when set, is the decided confirmation of the run that
	// the claim applies; "" claims without applying one (a cancel).
	ConfirmationID string
	// Owner and Epoch are the claiming term: the run's executor from now on.
	Owner string
	Epoch int64
}

// PauseRunParams are the arguments of PauseRun.
type PauseRunParams struct {
	// Tenant and RunID name the running run that pauses.
	Tenant string
	RunID  string
	// Owner and Epoch are the term executing it.
	Owner string
	Epoch int64
	// Confirmations are created pending, as by CreateConfirmation (each with
	// its ID set: the events name them).
	Confirmations []chat.Confirmation
	// Events are appended to the log, as by AppendEvents: the announcement
	// of the wait, after everything the run wrote before.
	Events []event.Event
	// State is what the run needs to continue; it must not be empty.
	State json.RawMessage
	// Usage is the run's usage so far.
	Usage event.Usage
}

// TakeOverRunParams are the arguments of TakeOverRun.
type TakeOverRunParams struct {
	// Tenant and RunID name the orphaned run.
	Tenant string
	RunID  string
	// Owner and Epoch are the taking term: the run's executor from now on.
	Owner string
	Epoch int64
	// Now is the taker's clock, against which the executing term's end is judged.
	Now time.Time
}

// ListEventsParams are the arguments of ListEvents.
type ListEventsParams struct {
	// Thread is the conversation whose log is read.
	Thread string
	// RunID, when set, keeps only that run's events.
	RunID string
	// AfterSeq is exclusive: events with seq > AfterSeq.
	AfterSeq int64
	// UntilSeq is inclusive: events with seq <= UntilSeq; 0 is no upper bound.
	UntilSeq int64
	// Limit bounds how many events are returned; 0 is no limit.
	Limit int
}

// Store is everything agentchat persists. It is deliberately wide: one seam,
// owned here, with one contract suite (storetest).
type Store interface {
	// Knowledge: retrieval, memory, blobs and compaction (knowledge.go).
	Knowledge
	// Agents: agents, their versions and the tenants' settings (agent.go).
	Agents
	// Usage: the usage records of ended runs (usage.go).
	Usage
	// Steering: the message tree's active branch, idempotency keys,
	// feedback, queued inputs and thread state (steering.go).
	Steering
	// Files: uploaded files' records (file.go).
	Files

	// Conversations.
	CreateConversation(ctx context.Context, s chat.Scope, c chat.Conversation) (chat.Conversation, error)
	GetConversation(ctx context.Context, s chat.Scope, id string) (chat.Conversation, error)
	// ListConversations returns newest UpdatedAt first (ties by id, descending) and the next cursor ("" at the end).
	ListConversations(ctx context.Context, s chat.Scope, f ConversationFilter, p Page) ([]chat.Conversation, string, error)
	UpdateConversation(ctx context.Context, s chat.Scope, id string, title *string, engine *string) (chat.Conversation, error)
	// DeleteConversation removes the conversation with its messages, runs, events and confirmations.
	DeleteConversation(ctx context.Context, s chat.Scope, id string) error

	// Messages. AppendMessage sets ID and CreatedAt when empty and bumps the conversation's UpdatedAt.
	AppendMessage(ctx context.Context, s chat.Scope, m chat.Message) (chat.Message, error)
	// ListMessages returns oldest CreatedAt first (ties by id) and the next cursor.
	ListMessages(ctx context.Context, s chat.Scope, conversationID string, f MessageFilter, p Page) ([]chat.Message, string, error)

	// StartRun writes everything a new run needs before it executes (the
	// conversation when new, the run, the user message) and reads the
	// thread's last seq, in as few round trips as the backend allows. It
	// fails like CreateConversation, CreateRun and AppendMessage. in is
	// the caller's, read only: a RunStart is ~1.5 KiB, and by value every
	// frame of a start that waits for its group commit held a copy (the
	// stream handler's stack; docs/benchmarks.md, issue 25, eighth round:
	// run stacks).
	StartRun(ctx context.Context, s chat.Scope, in *RunStart) (RunStarted, error)

	// Runs. CreateRun fails with *BusyError when the conversation has an active run.
	CreateRun(ctx context.Context, s chat.Scope, r chat.Run) (chat.Run, error)
	GetRun(ctx context.Context, s chat.Scope, id string) (chat.Run, error)
	// GetRunAnyOwner reads a run by id for the system (lease takeover, confirmations
	// expiring); never use it to answer a request.
	GetRunAnyOwner(ctx context.Context, tenant, id string) (chat.Run, error)
	UpdateRun(ctx context.Context, tenant, id string, u RunUpdate) (chat.Run, error)
	// ActiveRun returns the conversation's active run or ErrNotFound.
	ActiveRun(ctx context.Context, s chat.Scope, conversationID string) (chat.Run, error)
	// ListRuns lists a conversation's runs, oldest first.
	ListRuns(ctx context.Context, s chat.Scope, conversationID string) ([]chat.Run, error)
	// Replica liveness: one heartbeat per replica, not one lease per run.
	//
	// RegisterReplica begins a new term of replica id: its epoch goes up by
	// one (1 for a new id), alive until until. Runs of the replica's earlier
	// terms are orphaned from then on. With sole set, the caller says it is
	// the only process using the store: every other replica's term ends too.
	RegisterReplica(ctx context.Context, id string, until time.Time, sole bool) (epoch int64, err error)
	// RenewReplica keeps replica id's term epoch alive until until, if it was
	// still alive at now; otherwise (a newer term began, or it lapsed and its
	// runs may have been taken over) it is ErrConflict and the term is over.
	RenewReplica(ctx context.Context, id string, epoch int64, now, until time.Time) error
	// OrphanedRuns lists queued or running runs whose executing term is over
	// at now (ended, lapsed, or unknown), oldest first. Runs awaiting input
	// need no executor and are not listed.
	OrphanedRuns(ctx context.Context, now time.Time, limit int) ([]chat.Run, error)
	// TakeOverRun makes the term (owner, epoch) the executor of an active run
	// that is orphaned at now, or already that term's. Of racing takers
	// exactly one wins; it reports whether the caller did.
	TakeOverRun(ctx context.Context, p TakeOverRunParams) (bool, error)
	// ReserveSeqs raises the run's SeqReserved to upTo (never lowers it).
	ReserveSeqs(ctx context.Context, tenant, runID string, upTo int64) error
	// CancelRequests lists the ids of queued or running runs of the term
	// (owner, epoch) that someone asked to stop: the durable form of the
	// cancel message, for an executor that missed it.
	CancelRequests(ctx context.Context, owner string, epoch int64) ([]string, error)
	// ClaimRun continues a run awaiting input: it becomes running, executed
	// by the term (p.Owner, p.Epoch), in one atomic step, so exactly one of
	// racing claimers (on any replica) wins. With p.ConfirmationID set, the
	// claim also applies that decided confirmation of the run (sets its
	// AppliedAt) and requires it to be decided and not yet applied. A
	// refused claim is ErrConflict (ErrNotFound when the run does not exist).
	//
	// The claim takes the run's paused State: the run returned carries it,
	// the stored run no longer does (see PauseRun).
	ClaimRun(ctx context.Context, p ClaimRunParams) (chat.Run, error)
	// PauseRun records, in one transaction, everything that makes a run's
	// wait for a person visible: the confirmations it asks for, the events
	// announcing them, and the State (never empty) and Usage it resumes
	// from. Nobody sees the wait before the pause is recorded, so a wait a
	// client has seen survives any crash: a running run with a State is one
	// whose pause was recorded (ClaimRun clears the State), which recovery
	// sets awaiting input rather than ends. The run stays running here: its
	// executor publishes the announcement, then records the status with
	// UpdateRun, so a claim (which needs that status) gives out seqs after
	// the announcement's.
	//
	// The run must be running under the term (p.Owner, p.Epoch), or the
	// pause is refused with ErrConflict and nothing is written (ErrNotFound
	// when the run does not exist). Repeating a pause already recorded (a
	// retry whose answer was lost) writes nothing more and succeeds.
	PauseRun(ctx context.Context, p PauseRunParams) error
	// DeleteRunsEndedBefore removes finished runs (and their events) older than t; it returns how many.
	DeleteRunsEndedBefore(ctx context.Context, t time.Time) (int, error)

	// Event log. AppendEvents stores events in order; (thread, seq) is unique
	// and a duplicate is ErrConflict. Batches may span threads.
	AppendEvents(ctx context.Context, evs []event.Event) error
	// ListEvents returns the events of the thread p.Thread with
	// p.AfterSeq < seq <= p.UntilSeq, ascending (ListEventsParams).
	ListEvents(ctx context.Context, s chat.Scope, p ListEventsParams) ([]event.Event, error)
	// LastSeq is the thread's highest stored seq, 0 when it has none.
	LastSeq(ctx context.Context, tenant, thread string) (int64, error)

	// Confirmations.
	CreateConfirmation(ctx context.Context, c chat.Confirmation) (chat.Confirmation, error)
	GetConfirmation(ctx context.Context, s chat.Scope, id string) (chat.Confirmation, error)
	// DecideConfirmation records d if the confirmation is pending and not expired
	// at d.At. Repeating the decision already recorded returns it unchanged; a
	// different one is ErrConflict (with the stored confirmation returned).
	DecideConfirmation(ctx context.Context, s chat.Scope, id string, d chat.Decision) (chat.Confirmation, error)
	// ListConfirmations lists the principal's confirmations in a status ("" for all), newest first.
	ListConfirmations(ctx context.Context, s chat.Scope, status string) ([]chat.Confirmation, error)
	// ExpireConfirmations marks pending confirmations past their expiry as expired and returns them.
	ExpireConfirmations(ctx context.Context, now time.Time) ([]chat.Confirmation, error)
	// EndConfirmations marks the run's pending confirmations cancelled (at
	// at), because the run ended without them; it returns how many.
	EndConfirmations(ctx context.Context, tenant, runID string, at time.Time) (int, error)
	// UnappliedDecisions lists, across tenants, confirmations decided (or
	// expired) before decidedBefore and not yet applied, whose run still
	// awaits input: runs that a decision should have continued but that no
	// replica claimed (it died, or missed the news). Oldest decision first.
	UnappliedDecisions(ctx context.Context, decidedBefore time.Time, limit int) ([]chat.Confirmation, error)

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
	// ErrRunEnded: a decision on a confirmation whose run ended without it.
	// It wraps ErrConflict.
	ErrRunEnded = fmt.Errorf("%w: the run ended before this confirmation was decided", ErrConflict)
	// ErrTooManyRuns: StartRun refused by RunStart.MaxExecuting.
	ErrTooManyRuns = errors.New("too many executing runs")
)

// PauseRows is a pause as both backends write it: the events packed, the
// usage encoded, the confirmations filled in as created at at.
type PauseRows struct {
	Events        []EventRow
	Usage         []byte
	Confirmations []chat.Confirmation
}

// Rows encodes p for writing (see PauseRows).
func (p PauseRunParams) Rows(at time.Time) (PauseRows, error) {
	evs, err := PackEvents(p.Events)
	if err != nil {
		return PauseRows{}, fmt.Errorf("pause run %s: %w", p.RunID, err)
	}
	usage, err := json.Marshal(p.Usage)
	if err != nil {
		return PauseRows{}, fmt.Errorf("pause run %s: %w", p.RunID, err)
	}
	confs := make([]chat.Confirmation, len(p.Confirmations))
	for i, c := range p.Confirmations {
		FillConfirmation(&c, at)
		confs[i] = c
	}
	return PauseRows{Events: evs, Usage: usage, Confirmations: confs}, nil
}
