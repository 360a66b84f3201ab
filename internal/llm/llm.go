package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/errcode"
)

// Role is the author of a message in a model request.
type Role string

// Roles understood by every adapter.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Part is one piece of a multi-part user message: text, an image by URL,
// or an attached file's bytes.
type Part struct {
	Type     string `json:"type"` // PartText, PartImageURL, PartImage or PartDocument
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"imageUrl,omitempty"`
	// Name is an attached file's name: set on an image or document part,
	// and on a text part holding a text file's contents.
	Name string `json:"name,omitempty"`
	// MediaType and Data are an image's or a document's bytes.
	MediaType string `json:"mediaType,omitempty"`
	Data      []byte `json:"data,omitempty"`
}

// Part types. A PartDocument is a PDF: adapters send it as the provider's
// document input (Anthropic document blocks, OpenAI file parts); its Text,
// when set, is the text extracted from it, for models that read no PDFs.
const (
	PartText     = "text"
	PartImageURL = "image_url"
	PartImage    = "image"
	PartDocument = "document"
	// PartFile is a stored file not yet loaded (FileID in Text); engines
	// replace it before a call, and adapters refuse it.
	PartFile = "file"
)

// ToolCall is a complete tool call requested by the model.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // a JSON object as the model wrote it
}

// Message is one entry of the conversation sent to the model.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// Parts, when set, replaces Content for user messages with images.
	Parts []Part `json:"parts,omitempty"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"toolCallId,omitempty"`
	// Name is the tool's name on tool messages (Anthropic and some OpenAI-compatible servers want it).
	Name string `json:"name,omitempty"`
}

// ToolSpec describes a tool offered to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema of the arguments object
}

// Request is one model call.
type Request struct {
	Model       string // empty: the adapter's configured default
	Messages    []Message
	Tools       []ToolSpec
	MaxTokens   int      // 0: the adapter's default
	Temperature *float64 // nil: provider default
	// JSONObject asks for a JSON object answer (structured output) where the provider supports it.
	JSONObject bool
	// Schema, when set, names the JSON Schema the answer object must match.
	// Adapters ask for JSON mode (as JSONObject does); the caller puts the
	// schema in its prompt and validates the answer, since few
	// OpenAI-compatible providers enforce a schema. The offline model answers
	// the schemas it knows (Name) with a fitting object.
	Schema *OutputSchema
}

// OutputSchema is a named JSON Schema for a structured answer.
type OutputSchema struct {
	Name   string          // e.g. WorkflowPlan, CheckOutput
	Schema json.RawMessage // a JSON Schema of an object
}

// ToolCallDelta is a fragment of a tool call as it streams. The first fragment
// of a call carries ID and Name; later fragments of the same Index append to Arguments.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	ArgsDelta string
}

// Usage counts tokens of one model call, as the provider reports them.
type Usage struct {
	// InputTokens counts every input token, cached ones included
	// (OpenAI's prompt_tokens; Anthropic's input_tokens plus its cache
	// creation and cache read tokens).
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	// ReasoningTokens are the output tokens spent thinking (a part of
	// OutputTokens for OpenAI; Anthropic reports them apart).
	ReasoningTokens int `json:"reasoningTokens,omitempty"`
	// CachedInputTokens are the input tokens read from the provider's
	// prompt cache (OpenAI's prompt_tokens_details.cached_tokens,
	// Anthropic's cache_read_input_tokens): a part of InputTokens.
	CachedInputTokens int `json:"cachedInputTokens,omitempty"`
	// Estimated: the provider reported no usage (the offline model, a
	// gateway that strips it); the counts are an approximation.
	Estimated bool `json:"estimated,omitempty"`
	// Provider and Model name the model that answered, and Cost (in
	// nano-units of Currency, see Price) is the call's price: a Metered
	// model fills them in; a bare adapter leaves them empty.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	Cost     int64  `json:"cost,omitempty"`
	Currency string `json:"currency,omitempty"`
}

// Chunk is one streamed piece of a completion. Exactly one of its fields is set,
// except FinishReason which may come with the last piece.
type Chunk struct {
	Text         string
	Reasoning    string
	ToolCall     *ToolCallDelta
	Usage        *Usage
	FinishReason string // "stop", "tool_calls", "length", "content_filter"
}

// Stream yields the chunks of one completion.
type Stream interface {
	// Next advances to the next chunk; false at the end or on error.
	Next() bool
	// Chunk is the current chunk, valid after Next returned true.
	Chunk() Chunk
	// Err is the error that ended the stream, nil after a clean end.
	// A stream that ends without the provider's end marker reports ErrStreamCut.
	Err() error
	// Close releases the upstream connection; safe to call more than once.
	Close() error
}

// Model is a streaming language model.
type Model interface {
	// Name identifies the provider and model, for logs and the run record.
	Name() string
	// Stream starts a completion. Errors before the first chunk (connection
	// refused, 401, 429, 5xx) are returned here as *Error.
	Stream(ctx context.Context, req Request) (Stream, error)
}

// Error codes reported by adapters: wire codes, defined in package errcode.
const (
	CodeUnauthorized = errcode.LLMUnauthorized // 401/403 from the provider
	CodeRateLimited  = errcode.LLMRateLimited  // 429
	CodeUnavailable  = errcode.LLMUnavailable  // connection refused, 5xx
	CodeTimeout      = errcode.LLMTimeout      // request deadline exceeded
	CodeBadRequest   = errcode.LLMBadRequest   // 400/404/422: our request was refused
	CodeStreamCut    = errcode.LLMStreamCut    // the stream ended without its end marker
	CodeBadStream    = errcode.LLMMalformed    // the stream could not be parsed
	CodeUnknown      = errcode.LLMError
)

// Error is a provider failure with a stable code and a message safe to show a user.
type Error struct {
	Code    string
	Status  int // HTTP status from the provider, 0 if none
	Message string
	Err     error // the cause, for logs
	// RetryAfter is how long the provider asked us to wait before trying
	// again (Retry-After), 0 if it did not say. WithRetry honours it.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s (%d): %s", e.Code, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the call may be retried before any chunk was received.
func (e *Error) Retryable() bool {
	return e.Code == CodeRateLimited || e.Code == CodeUnavailable
}

// ErrStreamCut is wrapped by errors of streams that stopped before their end marker.
var ErrStreamCut = errors.New("model stream ended before its end marker")
