package httpapi

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/agentchat/agentchat/internal/agent"
	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/telemetry"
	"github.com/agentchat/agentchat/internal/usage"
)

// Error is an error with a public face: a status, a stable snake_case code and
// a message written for the client. Its cause, if any, is only logged.
type Error struct {
	Status  int
	Code    string
	Message string
	// Extra fields for the error object (e.g. activeRunId).
	Extra map[string]any
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter int
	// Header holds more response headers (the RateLimit headers of a
	// refusal by a limit).
	Header http.Header
	Cause  error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Cause)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

func apiErr(status int, code, format string, a ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, a...)}
}

// notFound is the one answer for missing objects and objects of others.
func notFound(code, what string) *Error {
	return apiErr(http.StatusNotFound, code, "%s not found", what)
}

// toAPIError maps any error to what the client sees. Unknown errors become a
// 500 with a generic message; the caller logs the cause once.
func toAPIError(err error, notFoundCode, what string) *Error {
	var ae *Error
	var re *dialect.RequestError
	var busy *store.BusyError
	var mbe *http.MaxBytesError
	var input *run.InputError
	var tooMany *run.TooManyRunsError
	var ve *agent.ValidationError
	var mismatch *run.AgentMismatchError
	if fe := fileRefusal(err); fe != nil {
		return fe
	}
	var refusal *usage.Refusal
	switch {
	case errors.As(err, &refusal):
		return limitError(refusal, cmp.Or(refusal.At, time.Now()))
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &re):
		return &Error{Status: re.Status, Code: re.Code, Message: re.Message}
	case errors.As(err, &ve):
		return &Error{Status: http.StatusUnprocessableEntity, Code: errcode.InvalidField, Message: ve.Error(), Extra: map[string]any{"field": ve.Field}}
	case errors.As(err, &mismatch):
		return &Error{Status: http.StatusConflict, Code: errcode.AgentMismatch, Extra: map[string]any{"agentId": mismatch.Bound},
			Message: "this conversation is bound to agent " + mismatch.Bound + "; its runs are that agent's (start a new conversation for another agent)"}
	case errors.Is(err, agent.ErrForbidden):
		return apiErr(http.StatusForbidden, errcode.AdminRequired, "only an admin of the tenant may change its agents and settings")
	case errors.Is(err, agent.ErrDraftPinned):
		return apiErr(http.StatusForbidden, errcode.AdminRequired, "only an admin may run an agent version that was never published")
	case errors.Is(err, agent.ErrBuiltIn):
		return apiErr(http.StatusConflict, errcode.AgentBuiltIn, "the built-in default agent is the server's configuration; create an agent to change what answers")
	case errors.Is(err, store.ErrArchived):
		return apiErr(http.StatusConflict, errcode.AgentArchived, "the agent is archived: it starts no new run and takes no change")
	case errors.Is(err, agent.ErrStale):
		return apiErr(http.StatusPreconditionFailed, errcode.PreconditionFailed, "the agent changed since the version this request built on; read it again")
	case errors.Is(err, run.ErrAgentNotFound):
		return notFound(errcode.AgentNotFound, "agent")
	case errors.Is(err, run.ErrAgentVersionNotFound), errors.Is(err, agent.ErrVersionNotFound):
		return notFound(errcode.AgentVersionNotFound, "agent version")
	case errors.Is(err, agent.ErrModelUnavailable):
		return apiErr(http.StatusUnprocessableEntity, errcode.ModelUnavailable, "the agent's model is not one this server offers any more; an admin must choose another")
	case errors.As(err, &busy):
		return &Error{Status: http.StatusConflict, Code: errcode.ConversationBusy,
			Message: "the conversation already has an active run; wait for it, or cancel it", Extra: map[string]any{"activeRunId": busy.ActiveRunID}}
	case errors.As(err, &mbe):
		return apiErr(http.StatusRequestEntityTooLarge, errcode.BodyTooLarge, "the request body is larger than %d bytes", mbe.Limit)
	case errors.Is(err, store.ErrNotFound):
		return notFound(notFoundCode, what)
	case errors.Is(err, store.ErrBadCursor):
		return apiErr(http.StatusBadRequest, errcode.InvalidCursor, "the cursor is not one this server issued")
	case errors.As(err, &input):
		return apiErr(http.StatusUnprocessableEntity, errcode.InvalidInput, "%s", input.Reason)
	case errors.Is(err, run.ErrInvalidInput):
		return apiErr(http.StatusUnprocessableEntity, errcode.InvalidInput, "the input cannot start a run")
	case errors.As(err, &tooMany):
		return &Error{Status: http.StatusTooManyRequests, Code: errcode.TooManyRuns, RetryAfter: 2,
			Message: fmt.Sprintf("this tenant already has as many runs in progress as it may (limit %d); try again when one has finished", tooMany.Limit)}
	case errors.Is(err, run.ErrTooManyRuns):
		return &Error{Status: http.StatusTooManyRequests, Code: errcode.TooManyRuns, RetryAfter: 2,
			Message: "this tenant already has as many runs in progress as it may; try again when one has finished"}
	case errors.Is(err, run.ErrOverloaded):
		return errOverloaded
	case errors.Is(err, run.ErrShuttingDown):
		return apiErr(http.StatusServiceUnavailable, errcode.ShuttingDown, "the server is shutting down; try again shortly")
	case errors.Is(err, store.ErrUnavailable):
		return &Error{Status: http.StatusServiceUnavailable, Code: errcode.StoreUnavailable, Message: "the database is unavailable; try again shortly", Cause: err}
	case errors.Is(err, bus.ErrUnavailable):
		return &Error{Status: http.StatusServiceUnavailable, Code: errcode.BusUnavailable, Message: "the event bus is unavailable; try again shortly", Cause: err}
	}
	return &Error{Status: http.StatusInternalServerError, Code: errcode.InternalError, Message: "something went wrong on our side", Cause: err}
}

// errOverloaded answers a request the server has no room for now: no
// descriptor for another connection, or no place for another run
// (fdbudget). It is not logged as a failure: under load there would be one
// line per refusal, and the access log has them.
var errOverloaded = &Error{Status: http.StatusServiceUnavailable, Code: errcode.Overloaded, RetryAfter: 1,
	Message: "the server is at capacity; try again in a moment"}

// writeError answers with the JSON error body, logging server-side causes once.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, e *Error) {
	if e.Status >= 500 && e != errOverloaded {
		log.ErrorContext(r.Context(), "request failed", "code", e.Code, "err", e.Cause)
	}
	body := map[string]any{"code": e.Code, "message": e.Message}
	for k, v := range e.Extra {
		body[k] = v
	}
	if id := telemetry.RequestID(r.Context()); id != "" {
		body["requestId"] = id
	}
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentchat"`)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	for k, v := range e.Header {
		w.Header()[k] = v
	}
	writeJSON(w, e.Status, map[string]any{"error": body})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// readBody reads a request body within the server's limit.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		// Read whole: lift the deadline. (After a failed read it stays, so
		// the server's discard of the rest fails fast and drops the connection.)
		liftBodyDeadline(r)
		bodyRead(r) // a stream answering r may detach (detach.go)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, apiErr(http.StatusRequestTimeout, errcode.BodyTimeout, "the request body did not arrive in time")
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, apiErr(http.StatusBadRequest, errcode.InvalidBody, "the request body could not be read")
	}
	return body, nil
}

// decodeJSON reads a JSON body strictly: one object, known fields, right
// types, text strings (dialect.DecodeJSON). An empty body is allowed when
// allowEmpty is set.
func decodeJSON(r *http.Request, v any, allowEmpty bool) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	return dialect.DecodeJSON(body, v, dialect.Strict, allowEmpty)
}
