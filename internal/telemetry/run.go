package telemetry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
)

// Run observes one execution of a run (a start, or a continuation after a
// decision): its span, its series. The run service makes one per execution
// and calls, in order: Parent (optional), Begin, Event for each event, End.
// Every method is safe on a nil *Run.
type Run struct {
	t      *Telemetry
	run    chat.Run
	parent trace.SpanContext // an incoming request's trace, when there was one
	start  time.Time
	span   trace.Span

	first   atomic.Bool // the first text delta was seen
	resumed atomic.Bool

	mu       sync.Mutex
	engine   string
	provider string
	model    string
	finish   string
}

// NewRun prepares the observer of one execution of r.
func (t *Telemetry) NewRun(r chat.Run) *Run {
	if t == nil {
		return nil
	}
	return &Run{t: t, run: r}
}

// Parent makes the run's span a child of the trace in ctx (the request that
// started the run, whose traceparent the HTTP middleware honoured).
func (r *Run) Parent(ctx context.Context) {
	if r == nil {
		return
	}
	r.parent = trace.SpanContextFromContext(ctx)
}

type runKey struct{}

// fromContext is the run a model or tool call belongs to.
func fromContext(ctx context.Context) *Run {
	r, _ := ctx.Value(runKey{}).(*Run)
	return r
}

// Begin starts the run's span in ctx (the execution's own context, which
// outlives any request) and returns the context the engine runs in.
func (r *Run) Begin(ctx context.Context) context.Context {
	if r == nil {
		return ctx
	}
	r.start = time.Now()
	if r.parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, r.parent)
	}
	ctx, r.span = r.t.tracer.Start(ctx, "invoke_agent agentchat", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			semconv.GenAIOperationNameInvokeAgent,
			semconv.GenAIAgentName("agentchat"),
			semconv.GenAIConversationID(r.run.ConversationID),
			attribute.String("agentchat.run.id", r.run.ID),
		))
	r.t.m.runsExecuting.Inc()
	return context.WithValue(ctx, runKey{}, r)
}

// SetEngine records the engine the router chose for the run in ctx.
func SetEngine(ctx context.Context, name string) {
	r := fromContext(ctx)
	if r == nil {
		return
	}
	r.mu.Lock()
	first := r.engine == ""
	r.engine = name
	r.mu.Unlock()
	if first {
		r.t.m.runsStarted.WithLabelValues(r.t.tenant(r.run.Tenant, name)...).Inc()
		r.span.SetAttributes(attribute.String("agentchat.engine", name))
	}
}

func (r *Run) engineName() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.engine == "" {
		return "none"
	}
	return r.engine
}

// Event observes an event the run emitted. It is called on the run's hot
// path (every token), so it only looks at a few kinds.
func (r *Run) Event(ev event.Event) {
	if r == nil {
		return
	}
	switch p := ev.Payload.(type) {
	case event.TextDeltaData:
		if !r.resumed.Load() && r.first.CompareAndSwap(false, true) {
			r.t.m.ttft.WithLabelValues(r.engineName()).Observe(time.Since(r.start).Seconds())
			r.span.AddEvent("first_token")
		}
	case event.ToolAwaitingData:
		r.t.m.confirmRequested.WithLabelValues(p.Name).Inc()
	case event.RunResumedData:
		r.resumed.Store(true)
		r.t.m.confirmDecided.WithLabelValues(p.Decision).Inc()
	}
}

// Waited records the time the run waited for a person's decision on c, as
// a span of its own under the continuing run (the wait itself held no
// process, so it is recorded when the decision continues the run).
func Waited(ctx context.Context, c chat.Confirmation) {
	r := fromContext(ctx)
	if r == nil {
		return
	}
	end := time.Now()
	if c.DecidedAt != nil {
		end = *c.DecidedAt
	}
	_, span := r.t.tracer.Start(ctx, "await_confirmation "+c.ToolName, trace.WithTimestamp(c.CreatedAt),
		trace.WithAttributes(
			semconv.GenAIToolName(c.ToolName),
			semconv.GenAIToolCallID(c.ToolCallID),
			attribute.String("agentchat.confirmation.id", c.ID),
			attribute.String("agentchat.confirmation.status", c.Status),
		))
	span.End(trace.WithTimestamp(end))
}

// model notes what a model call of the run reported, for the run's span.
func (r *Run) sawModel(provider, model, finish string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.provider, r.model = provider, model
	if finish != "" {
		r.finish = finish
	}
}

// End records the outcome of the execution (its status: succeeded, failed,
// cancelled or awaiting_input; the failure; the run's usage) and ends its span.
func (r *Run) End(status string, fail *event.ErrorInfo, usage event.Usage) {
	if r == nil {
		return
	}
	eng := r.engineName()
	if eng == "none" { // the router never chose: count the start here
		r.t.m.runsStarted.WithLabelValues(r.t.tenant(r.run.Tenant, eng)...).Inc()
	}
	r.t.m.runsExecuting.Dec()
	r.t.m.runsEnded.WithLabelValues(r.t.tenant(r.run.Tenant, eng, status)...).Inc()
	r.t.m.runDuration.WithLabelValues(eng, status).Observe(time.Since(r.start).Seconds())

	r.mu.Lock()
	attrs := []attribute.KeyValue{
		attribute.String("agentchat.run.status", status),
		semconv.GenAIUsageInputTokens(usage.InputTokens),
		semconv.GenAIUsageOutputTokens(usage.OutputTokens),
	}
	if r.provider != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(r.provider), semconv.GenAIRequestModel(r.model))
	}
	if r.finish != "" {
		attrs = append(attrs, semconv.GenAIResponseFinishReasons(r.finish))
	}
	r.mu.Unlock()
	r.span.SetAttributes(attrs...)
	if status == event.StatusFailed {
		msg := "run failed"
		if fail != nil {
			msg = fail.Code + ": " + fail.Message
			r.span.SetAttributes(semconv.ErrorTypeKey.String(fail.Code))
		}
		r.span.SetStatus(codes.Error, msg)
	}
	r.span.End()
}
