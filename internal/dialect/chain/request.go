package chain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
)

// DefaultMaxSteps is max_steps when a request does not say (seed 003).
const DefaultMaxSteps = 6

// Request is a chain stream request: the query of GET /v1/chain/stream or
// the JSON body of POST /v1/chain/stream.
type Request struct {
	// UserInput is the text the chain works on (user_input). Required unless
	// RunID names a chain to attach to.
	UserInput string `json:"user_input"`
	// MaxSteps is max_steps as asked; 0 when the request did not say.
	MaxSteps int `json:"max_steps"`
	// ConversationID runs the chain in one of the principal's conversations
	// (conversationId); empty lets the server choose.
	ConversationID string `json:"conversationId"`
	// RunID attaches to an existing chain instead of starting one (run_id).
	RunID string `json:"run_id"`
	// AgentID picks the agent whose model and tools the planner, executor
	// and check use (agent_id); AgentVersion pins one of its versions
	// (agent_version).
	AgentID      string `json:"agent_id"`
	AgentVersion int    `json:"agent_version"`
}

// Agent is the agent the request names.
func (r Request) Agent() dialect.AgentRef {
	return dialect.AgentRef{ID: r.AgentID, Version: r.AgentVersion}
}

// Steps is the step limit the request asks for: MaxSteps, else DefaultMaxSteps.
func (r Request) Steps() int {
	if r.MaxSteps > 0 {
		return r.MaxSteps
	}
	return DefaultMaxSteps
}

// RequestError is a request the chain stream cannot take; Field names the
// parameter at fault.
type RequestError struct {
	Field   string
	Message string
}

func (e *RequestError) Error() string { return e.Message }

// As lets errors.As read e as the 400 every surface answers a refused
// request with: a missing user_input is missing_field, a body that is not
// JSON invalid_json, anything else invalid_field.
func (e *RequestError) As(target any) bool {
	t, ok := target.(**dialect.RequestError)
	if !ok {
		return false
	}
	code := errcode.InvalidField
	switch e.Field {
	case "user_input":
		code = errcode.MissingField
	case "body":
		code = errcode.InvalidJSON
	}
	*t = dialect.BadRequest(code, "%s", e.Message)
	return true
}

// ParseQuery reads a GET request's query. access_token and other
// parameters that are not the chain's are ignored.
func ParseQuery(q url.Values) (Request, error) {
	r := Request{UserInput: q.Get("user_input"), ConversationID: q.Get("conversationId"), RunID: q.Get("run_id"), AgentID: q.Get("agent_id")}
	if v := q.Get("agent_version"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return r, &RequestError{"agent_version", "agent_version must be a version number (1 or more)"}
		}
		r.AgentVersion = n
	}
	if v := q.Get("max_steps"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return r, &RequestError{"max_steps", "max_steps must be a whole number"}
		}
		r.MaxSteps = n
		if n < 1 {
			return r, &RequestError{"max_steps", "max_steps must be at least 1"}
		}
	}
	return r, r.check()
}

// ParseBody reads a POST request's JSON body {user_input, max_steps?,
// conversationId?}; unknown fields are ignored.
func ParseBody(raw []byte) (Request, error) {
	var body struct {
		UserInput      *string          `json:"user_input"`
		MaxSteps       *json.RawMessage `json:"max_steps"`
		ConversationID string           `json:"conversationId"`
		RunID          string           `json:"run_id"`
		AgentID        string           `json:"agent_id"`
		AgentVersion   *json.RawMessage `json:"agent_version"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return Request{}, &RequestError{"body", "the body must be a JSON object: " + err.Error()}
	}
	r := Request{ConversationID: body.ConversationID, RunID: body.RunID, AgentID: body.AgentID}
	if body.AgentVersion != nil && !bytes.Equal(bytes.TrimSpace(*body.AgentVersion), []byte("null")) {
		if err := json.Unmarshal(*body.AgentVersion, &r.AgentVersion); err != nil || r.AgentVersion < 1 {
			return r, &RequestError{"agent_version", "agent_version must be a version number (1 or more)"}
		}
	}
	if body.UserInput != nil {
		r.UserInput = *body.UserInput
	}
	if body.MaxSteps != nil && !bytes.Equal(bytes.TrimSpace(*body.MaxSteps), []byte("null")) {
		var n int
		if err := json.Unmarshal(*body.MaxSteps, &n); err != nil {
			return r, &RequestError{"max_steps", "max_steps must be a whole number"}
		}
		if n < 1 {
			return r, &RequestError{"max_steps", "max_steps must be at least 1"}
		}
		r.MaxSteps = n
	}
	return r, r.check()
}

func (r Request) check() error {
	if r.RunID == "" && strings.TrimSpace(r.UserInput) == "" {
		return &RequestError{"user_input", "user_input is required"}
	}
	if err := dialect.CheckAgentRef(r.Agent(), "agent_id", "agent_version"); err != nil {
		var re *dialect.RequestError
		errors.As(err, &re)
		return &RequestError{"agent_id", re.Message}
	}
	return nil
}

// OverLimit reports whether the request asks for more steps than limit
// allows: such a request is answered with Rejection and runs nothing.
func (r Request) OverLimit(limit int) bool { return limit > 0 && r.Steps() > limit }

// Header is the chain stream's response header.
func Header() http.Header {
	return http.Header{
		"Content-Type":      {"text/event-stream"},
		"Cache-Control":     {"no-cache"},
		"X-Accel-Buffering": {"no"},
	}
}

// Rejection appends the one frame that answers a request over the hard
// limit (seed 003 上限与提示): final, numbered 1, with text that explains
// the limit. Nothing runs; the caller closes the stream after it. trace is a
// W3C trace id (the request's), written as traceUUID does.
func Rejection(dst []byte, asked, limit int, trace string, now time.Time) []byte {
	trace = traceUUID(trace)
	text := fmt.Sprintf("max_steps=%d 超过上限 CHAIN_HARD_LIMIT=%d，未执行。max_steps %d is above this server's limit of %d steps (CHAIN_HARD_LIMIT), so nothing was run; ask for %d or fewer.",
		asked, limit, asked, limit, limit)
	b, _ := json.Marshal(envelope{Evt: Final, Seq: 1, TS: dialect.Millis(now), TraceID: trace, Schema: SchemaVersion, Payload: text})
	return dialect.AppendFrame(dst, dialect.Frame{ID: "1", Event: Final, Data: b})
}

// Count is how many frames a run's events make, from its first event: the
// id of its last frame.
func Count(evs []event.Event) int64 {
	e := NewEncoder(Options{After: 1<<63 - 1})
	for _, ev := range evs {
		e.Encode(nil, ev)
	}
	return e.Frames()
}
