package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentchat/agentchat/internal/chat"
)

// LogHandler adds trace_id and span_id to every record logged with a
// context that carries a span (a request's, a run's), so a log line leads
// to its trace, and request_id to every record logged with a request's
// context (WithRequestID). A logger that names its trace_id already
// (RunLogger) keeps it: the record gets only the span_id of a span in that
// trace.
func LogHandler(h slog.Handler) slog.Handler { return traceHandler{Handler: h} }

type traceHandler struct {
	slog.Handler
	trace   string // the trace_id the logger's attributes name, if any
	request bool   // the logger's attributes name a request_id
}

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" && !h.request {
		r.AddAttrs(slog.String("request_id", id))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		switch id := sc.TraceID().String(); h.trace {
		case "":
			r.AddAttrs(slog.String("trace_id", id), slog.String("span_id", sc.SpanID().String()))
		case id:
			r.AddAttrs(slog.String("span_id", sc.SpanID().String()))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	for _, a := range as {
		switch a.Key {
		case "trace_id":
			h.trace = a.Value.String()
		case "request_id":
			h.request = true
		}
	}
	return traceHandler{h.Handler.WithAttrs(as), h.trace, h.request}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name), h.trace, h.request}
}

// TraceID is the trace id of the span in ctx, empty when there is none.
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}

// RunLogger is l for the lines written about run r: each carries its
// run_id and trace_id, whether or not it is logged with the run's context.
func RunLogger(l *slog.Logger, r chat.Run) *slog.Logger {
	return l.With("run_id", r.ID, "trace_id", r.TraceID)
}

type requestIDKey struct{}

// WithRequestID gives ctx the request's id: the caller's (an X-Request-ID
// header) when it is short and plain, so it cannot forge log lines or
// headers, else a new random one. Every line logged with the context
// carries it as request_id.
func WithRequestID(ctx context.Context, given string) (context.Context, string) {
	id := given
	if !validRequestID(id) {
		var b [12]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	return context.WithValue(ctx, requestIDKey{}, id), id
}

// RequestID is the id of the request ctx serves, empty outside one.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
