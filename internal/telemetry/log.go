package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentchat/agentchat/internal/chat"
)

// LogHandler adds trace_id and span_id to every record logged with a
// context that carries a span (a request's, a run's), so a log line leads
// to its trace. A logger that names its trace_id already (RunLogger) keeps
// it: the record gets only the span_id of a span in that trace.
func LogHandler(h slog.Handler) slog.Handler { return traceHandler{Handler: h} }

type traceHandler struct {
	slog.Handler
	trace string // the trace_id the logger's attributes name, if any
}

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
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
		if a.Key == "trace_id" {
			h.trace = a.Value.String()
		}
	}
	return traceHandler{h.Handler.WithAttrs(as), h.trace}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name), h.trace}
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
