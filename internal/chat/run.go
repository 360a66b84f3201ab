package chat

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/agentchat/agentchat/internal/event"
)

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
	// AgentID and AgentVersion name the agent version the run executes,
	// resolved once when the run starts: every execution of the run (its
	// continuations after a decision included) uses that version. Empty and
	// 0 for a run stored before agents; AgentVersion is 0 for the built-in
	// default agent, which has no versions.
	AgentID      string
	AgentVersion int
	// ParentID is the message the run's first message follows ("" for a
	// first message): the point of the tree the run answers from.
	ParentID string
	Error    *event.ErrorInfo
	Usage    event.Usage
	// TraceID is the W3C trace id (32 lowercase hex digits, never all zero)
	// of the run, fixed when the run starts and kept for its whole life, so
	// its logs, its spans, the chain stream's trace_id and the API agree. It
	// is the trace of the run's span when tracing is on (a child of the
	// starting request's trace when the request carried a traceparent), the
	// incoming traceparent's trace when tracing is off, and otherwise a fresh
	// random one (NewTraceID; the store fills one in for a run stored
	// without). A continuation after a confirmation, on any replica, joins it.
	TraceID string
	// SpanID is the span (16 hex digits) that the spans of the run's
	// continuations are children of: the span of the run's first execution,
	// or, when that was not traced, the caller's span named by its
	// traceparent, or a random id no exported span has. Empty for a run
	// stored without a trace.
	SpanID string
	// State is the engine's resumable state (e.g. the pending tool calls of a
	// run awaiting input), opaque to the store.
	State     json.RawMessage
	CreatedAt time.Time
	StartedAt time.Time
	EndedAt   *time.Time
	// LeaseOwner and LeaseEpoch name the replica term executing the run:
	// the run is orphaned once that term has ended or lapsed (see
	// Store.RegisterReplica). Empty and 0 for a run no replica executes.
	LeaseOwner string
	LeaseEpoch int64
	// SeqReserved is the highest seq of the thread the run's executor may
	// publish before the log holds it (store.Store.ReserveSeqs). A replica ending the
	// run after its executor died continues after it.
	SeqReserved int64
	// CancelRequested records that someone asked to stop the run. It is the
	// durable form of the cancel control message: an executor that missed the
	// message sees it at its replica's next heartbeat (store.Store.CancelRequests).
	CancelRequested bool
}

// Confirmation statuses.
const (
	ConfirmPending  = "pending"
	ConfirmApproved = "approved"
	ConfirmRejected = "rejected"
	ConfirmExpired  = "expired"
	// ConfirmCancelled: its run ended (cancelled, failed, lost) before a
	// decision; deciding it now is refused, since nothing would run.
	ConfirmCancelled = "cancelled"
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
	// AppliedAt is when the run continued with this decision (store.Store.ClaimRun); nil
	// until then. A decided confirmation not yet applied to a run awaiting
	// input is work left undone (store.Store.UnappliedDecisions).
	AppliedAt *time.Time
}

// MaxReasonLength bounds the reason a person gives with a decision, in bytes.
const MaxReasonLength = 2000

// Decision is a person's answer to a confirmation.
type Decision struct {
	Status string // ConfirmApproved or ConfirmRejected (ConfirmExpired by the system)
	Args   json.RawMessage
	Reason string
	At     time.Time
}

// NewTraceID returns a random W3C trace id: 16 random bytes as 32 lowercase
// hex digits, never all zero.
func NewTraceID() string {
	var b [16]byte
	for b == ([16]byte{}) {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	}
	return hex.EncodeToString(b[:])
}
