// Package errcode holds agentchat's wire error codes: the stable snake_case
// "code" of every error body ({"error":{"code","message"}}) and of every
// error a stream carries (a run's failure in its error event, a stream cut
// short by the server). Clients branch on these strings, so each is
// written here once and nowhere else in the server's code; tests spell
// them out, to pin the wire.
//
// It imports nothing, so that every layer can use it: the dialects and
// their request decoders, the engines and the provider adapters, the run
// service and the HTTP edge.
//
// A code is never renamed or reused for another meaning: a client that
// knows it must go on understanding it.
package errcode

// Requests refused before anything ran (4xx bodies).
const (
	// InvalidJSON: the body is not the JSON object the endpoint reads.
	InvalidJSON = "invalid_json"
	// InvalidBody: the body could not be read.
	InvalidBody = "invalid_body"
	// BodyTooLarge: the body is over the server's limit (413).
	BodyTooLarge = "body_too_large"
	// BodyTimeout: the body did not arrive in time (408).
	BodyTimeout = "body_timeout"
	// InvalidField: a field has a value the endpoint cannot use.
	InvalidField = "invalid_field"
	// MissingField: a required field is absent.
	MissingField = "missing_field"
	// UnknownField: the body has a field the endpoint does not know.
	UnknownField = "unknown_field"
	// InvalidText: a string is not text (UTF-8 without NUL).
	InvalidText = "invalid_text"
	// InvalidInput: the request is well-formed but cannot start a run.
	InvalidInput = "invalid_input"
	// InvalidResume: the answers to a run's interrupts do not fit it.
	InvalidResume = "invalid_resume"
	// UnsupportedContent: a message part of a type the server does not take.
	UnsupportedContent = "unsupported_content"
	// UnsupportedPart: an attachment of a media type the server does not take.
	UnsupportedPart = "unsupported_part"
	// UnsupportedFormat: a wire format the endpoint does not speak.
	UnsupportedFormat = "unsupported_format"
	// DocumentTooLarge: a knowledge document over the size limit (413).
	DocumentTooLarge = "document_too_large"
	// InvalidCursor: a page cursor this server did not issue.
	InvalidCursor = "invalid_cursor"
	// InvalidLimit: a page size out of range.
	InvalidLimit = "invalid_limit"
	// InvalidStatus: a status filter the list does not know.
	InvalidStatus = "invalid_status"
	// InvalidBefore: a history day that is not a date.
	InvalidBefore = "invalid_before"
	// InvalidLastEventID: a Last-Event-ID this server did not send.
	InvalidLastEventID = "invalid_last_event_id"
	// InvalidChatID: a chat id of the wrong shape.
	InvalidChatID = "invalid_chat_id"
	// MissingThreadID: a thread id the endpoint needs is absent.
	MissingThreadID = "missing_thread_id"
	// MethodNotAllowed: the route exists, not with this method (405).
	MethodNotAllowed = "method_not_allowed"
	// Unauthorized: no token, or not a valid one (401).
	Unauthorized = "unauthorized"
	// TenantForbidden: the token may not act for the named tenant (403).
	TenantForbidden = "tenant_forbidden"
	// OriginNotAllowed: a browser request from an origin not configured (403).
	OriginNotAllowed = "origin_not_allowed"
	// InvalidQuery: a query parameter with a value the endpoint cannot use.
	InvalidQuery = "invalid_query"
	// AdminRequired: only an admin of the tenant may do this (403): change
	// an agent or the tenant's settings, or run an agent version that was
	// never published.
	AdminRequired = "admin_required"
	// PreconditionFailed: If-Match names a version that is no longer the
	// latest (412).
	PreconditionFailed = "precondition_failed"
	// ModelUnavailable: the agent's model is no longer one the server offers (422).
	ModelUnavailable = "model_unavailable"
)

// Objects not found (404): missing, or not the caller's.
const (
	NotFound             = "not_found"
	ConversationNotFound = "conversation_not_found"
	RunNotFound          = "run_not_found"
	RunTimelineNotFound  = "run_timeline_not_found"
	ThreadNotFound       = "thread_not_found"
	MessageNotFound      = "message_not_found"
	FeedbackNotFound     = "feedback_not_found"
	ConfirmationNotFound = "confirmation_not_found"
	InterruptNotFound    = "interrupt_not_found"
	DocumentNotFound     = "document_not_found"
	// KnowledgeDisabled: the server runs without a knowledge base.
	KnowledgeDisabled = "knowledge_disabled"
	// CompactionDisabled: the server does not compact conversations.
	CompactionDisabled = "compaction_disabled"
	// AgentNotFound, AgentVersionNotFound: no such agent of the tenant, or
	// no such version of it.
	AgentNotFound        = "agent_not_found"
	AgentVersionNotFound = "agent_version_not_found"
	// AgentsDisabled: the server runs without agents.
	AgentsDisabled = "agents_disabled"
	// FileNotFound: no such file of the caller's.
	FileNotFound = "file_not_found"
	// FilesDisabled: the server runs without file storage.
	FilesDisabled = "files_disabled"
)

// Files refused (see package file).
const (
	// FileTooLarge: the file is over the size limit (413).
	FileTooLarge = "file_too_large"
	// UnsupportedFileType: the file's sniffed media type is not allowed (415),
	// or the model cannot take it (422).
	UnsupportedFileType = "unsupported_file_type"
	// FileQuotaExceeded: the tenant's file storage is full (507).
	FileQuotaExceeded = "file_quota_exceeded"
	// FileURLRefused: a file URL a client gave cannot be fetched (a private
	// address, a failure, a non-2xx answer) (422).
	FileURLRefused = "file_url_refused"
)

// Conflicts with the state of a conversation, run or decision.
const (
	// ConversationBusy: the conversation has an active run (409, with activeRunId).
	ConversationBusy = "conversation_busy"
	// RunInterrupted: a cancelled run's error code when a new input
	// interrupted it (multitaskStrategy interrupt or rollback).
	RunInterrupted = "run_interrupted"
	// Conflict: the state changed while the request was served; retry.
	Conflict = "conflict"
	// CompactionNotNeeded: the conversation is too short to compact.
	CompactionNotNeeded = "compaction_not_needed"
	// AgentArchived: the agent is archived: no new run, no change (409).
	AgentArchived = "agent_archived"
	// AgentMismatch: the conversation is bound to another agent (409, with agentId).
	AgentMismatch = "agent_mismatch"
	// AgentBuiltIn: the built-in default agent cannot be changed (409).
	AgentBuiltIn = "agent_built_in"
	// NothingToRegenerate: the chat has no answer to regenerate.
	NothingToRegenerate = "nothing_to_regenerate"
	// MessageNotEditable: only a person's (user) message can be edited (422).
	MessageNotEditable = "message_not_editable"
	// IdempotencyKeyReused: an Idempotency-Key came again with another
	// request body (422).
	IdempotencyKeyReused = "idempotency_key_reused"
	// NoPendingToolCall: tool results answer no call the thread waits for.
	NoPendingToolCall = "no_pending_tool_call"
	// ConfirmationRunEnded: the confirmation's run has ended.
	ConfirmationRunEnded = "confirmation_run_ended"
	// ConfirmationAlreadyDecided: someone decided the confirmation first.
	ConfirmationAlreadyDecided = "confirmation_already_decided"
	// ConfirmationExpired: nobody decided in time. A 410 to a late
	// decision, and the failure of the run that waited for it.
	ConfirmationExpired = "confirmation_expired"
	// InterruptRunEnded, InterruptAlreadyResolved and InterruptExpired are
	// the AG-UI names of the three above.
	InterruptRunEnded        = "interrupt_run_ended"
	InterruptAlreadyResolved = "interrupt_already_resolved"
	InterruptExpired         = "interrupt_expired"
)

// The server cannot take the request now.
const (
	// TooManyRuns: the tenant has as many runs executing as it may (429).
	TooManyRuns = "too_many_runs"
	// RateLimited: a runs-per-minute limit (of the tenant, the user or the
	// agent) is reached; Retry-After says when a run fits again (429).
	RateLimited = "rate_limited"
	// QuotaExceeded: a token or cost budget (per day or month) is spent:
	// before a run, a 429 with Retry-After at the window's end; during a
	// run, between its model calls, the run's error (its answer so far is
	// kept).
	QuotaExceeded = "quota_exceeded"
	// ShuttingDown: the server no longer starts runs (503).
	ShuttingDown = "shutting_down"
	// Overloaded: the server has no room for another run or connection now,
	// by its open-files budget; Retry-After says when to try again (503).
	Overloaded = "overloaded"
	// StoreUnavailable: the database cannot be reached (503).
	StoreUnavailable = "store_unavailable"
	// BusUnavailable: the event bus cannot be reached (503).
	BusUnavailable = "bus_unavailable"
	// InternalError: anything else; the cause is logged, never sent (500).
	InternalError = "internal_error"
)

// A run's failure: the code of its error event and of its stored error.
const (
	// RunFailed: an engine failed without saying why.
	RunFailed = "run_failed"
	// StartFailed: the run was stored but could not begin.
	StartFailed = "start_failed"
	// RunTimeout: the run took longer than the server allows.
	RunTimeout = "run_timeout"
	// ServerShutdown: the server stopped during the run, or (in a stream)
	// is stopping; the client reconnects with Last-Event-ID.
	ServerShutdown = "server_shutdown"
	// ExecutorLost: the replica running the run stopped before it finished.
	ExecutorLost = "executor_lost"
	// EngineUnavailable: no engine can run the request.
	EngineUnavailable = "engine_unavailable"
	// StoreFailed: the conversation could not be read or the answer saved.
	StoreFailed = "store_failed"
	// ResumeFailed: a paused run's state could not be read.
	ResumeFailed = "resume_failed"
	// PauseFailed: a chain could not be paused for a confirmation.
	PauseFailed = "pause_failed"
	// InvalidPlan, InvalidCheck: the chain's planner or checker produced
	// nothing usable; SchemaFailed: a step's schema did not compile.
	InvalidPlan  = "invalid_plan"
	InvalidCheck = "invalid_check"
	SchemaFailed = "schema_failed"
	// AgentUnavailable: a paused run's agent version could not be read
	// back for its continuation.
	AgentUnavailable = "agent_unavailable"
	// RunIncomplete: a stream saw the run end without its final event.
	RunIncomplete = "run_incomplete"
)

// A model provider's failure (see package llm).
const (
	LLMUnauthorized = "llm_unauthorized" // 401/403 from the provider
	LLMRateLimited  = "llm_rate_limited" // 429
	LLMUnavailable  = "llm_unavailable"  // connection refused, 5xx
	LLMTimeout      = "llm_timeout"      // request deadline exceeded
	LLMBadRequest   = "llm_bad_request"  // 400/404/422: our request was refused
	LLMStreamCut    = "llm_stream_cut"   // the stream ended without its end marker
	LLMMalformed    = "llm_malformed"    // the stream could not be parsed
	LLMError        = "llm_error"        // anything else
)

// A stream the server ends before its run does; the client reconnects with
// Last-Event-ID (ServerShutdown, above, is one too).
const (
	// StreamInterrupted: the stream could not go on (the bus failed, say).
	StreamInterrupted = "stream_interrupted"
	// SlowConsumer: the client fell too far behind the run.
	SlowConsumer = "slow_consumer"
	// EncodeFailed: an event could not be encoded in the stream's format.
	EncodeFailed = "encode_failed"
)

// PayloadUnavailable marks, in a message's JSON, a large payload that was
// stored apart and could not be read back ({"_ref", "_error"}).
const PayloadUnavailable = "payload_unavailable"
