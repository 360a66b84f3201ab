package telemetry

import (
	"context"
	"crypto/rand"
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
// decision): its span, its series. The run service makes one per execution,
// before the execution's run is stored or claimed, and calls, in order:
// Bind (a new run, once stored) or Abort (it could not be), Begin, Event for
// each event, End.
//
// A Run is never nil. Without a *Telemetry it records nothing but still
// carries the run's trace context, so every run has a trace id whether or
// not tracing is on (see chat.Run.TraceID).
type Run struct {
	t     *Telemetry // nil: record nothing
	run   chat.Run
	start time.Time
	began bool       // Begin was called: the run counts as executing
	span  trace.Span // its SpanContext is the run's trace context, always valid

	first   atomic.Bool // the first text delta was seen
	resumed atomic.Bool

	mu       sync.Mutex
	engine   string
	provider string
	model    string
	finish   string
}

// Cause is the span of a request that made a run continue (a person's
// decision), linked from the continuation's span. The zero Cause links nothing.
type Cause struct{ sc trace.SpanContext }

// CauseOf is the span of the request in ctx.
func CauseOf(ctx context.Context) Cause { return Cause{trace.SpanContextFromContext(ctx)} }

// runSpanName is the span of each execution of a run (GenAI: invoke_agent {agent}).
const runSpanName = "invoke_agent agentchat"

// NewRun starts the span of a new run's first execution, before the run is
// stored, so that the run's row can name its trace (TraceID, SpanID). The
// span is a child of the trace in ctx: the starting request's server span,
// which honoured an incoming traceparent. Without tracing, the run takes
// that traceparent's trace, or else a fresh random one.
func (t *Telemetry) NewRun(ctx context.Context) *Run {
	parent := trace.SpanContextFromContext(ctx)
	r := &Run{t: t}
	if t == nil {
		r.span = spanOf(parent)
		return r
	}
	_, r.span = t.tracer.Start(trace.ContextWithSpanContext(context.Background(), parent), runSpanName,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName("agentchat")))
	if !r.span.SpanContext().IsValid() { // a tracer that makes no spans (tracing off)
		r.span = spanOf(parent)
	}
	return r
}

// ContinueRun starts the span of a stored run's continuation (after a
// decision, or to end it cancelled), on whichever replica claimed it. The
// span joins the run's stored trace as a child of the run's first span
// (chat.Run.SpanID), so one trace holds the whole run however long it
// waited; the request whose decision made it continue, in a trace of its
// own, is a link. That is OpenTelemetry's split: a span has one parent, the
// operation it is part of, and links for the other spans that caused it.
func (t *Telemetry) ContinueRun(r chat.Run, cause Cause) *Run {
	tid, err := trace.TraceIDFromHex(r.TraceID)
	var parent trace.SpanContext
	if err == nil {
		sid, err := trace.SpanIDFromHex(r.SpanID)
		if err != nil { // a run stored without a span: keep its trace, under a parent no backend has
			sid = newSpanID()
		}
		// Sampled: a replica that traces records the continuation even if the
		// first execution was not traced here.
		parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	}
	x := &Run{t: t, run: r}
	if t == nil {
		x.span = spanOf(parent)
		return x
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(x.attrs()...)}
	if cause.sc.IsValid() && cause.sc.TraceID() != tid {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: cause.sc}))
	}
	_, x.span = t.tracer.Start(trace.ContextWithSpanContext(context.Background(), parent), runSpanName, opts...)
	if !x.span.SpanContext().IsValid() {
		x.span = spanOf(parent)
	}
	return x
}

// spanOf is a span that records nothing and carries sc, or a fresh random
// trace context when sc is not valid.
func spanOf(sc trace.SpanContext) trace.Span {
	if !sc.IsValid() {
		tid, _ := trace.TraceIDFromHex(chat.NewTraceID())
		sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: newSpanID()})
	}
	return trace.SpanFromContext(trace.ContextWithSpanContext(context.Background(), sc))
}

func newSpanID() trace.SpanID {
	var id trace.SpanID
	for !id.IsValid() {
		_, _ = rand.Read(id[:])
	}
	return id
}

// TraceID is the run's trace id, to store on the run (chat.Run.TraceID).
func (r *Run) TraceID() string { return r.span.SpanContext().TraceID().String() }

// SpanID is the span the run's continuations are children of (chat.Run.SpanID).
func (r *Run) SpanID() string { return r.span.SpanContext().SpanID().String() }

func (r *Run) attrs() []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName("agentchat"),
		semconv.GenAIConversationID(r.run.ConversationID),
		attribute.String("agentchat.run.id", r.run.ID),
	}
}

// Bind names the stored run a NewRun span belongs to.
func (r *Run) Bind(run chat.Run) {
	r.run = run
	r.span.SetAttributes(r.attrs()...)
}

// Abort ends the span of a run that could not be stored: it never executed.
func (r *Run) Abort(err error) {
	if r.began && r.t != nil {
		r.t.m.runsExecuting.Dec() // it began early (Begin) and was discarded
	}
	r.span.SetStatus(codes.Error, "the run could not start")
	r.span.RecordError(err)
	r.span.End()
}

type runKey struct{}

// fromContext is the run a model or tool call belongs to; nil when there
// is none or it records nothing.
func fromContext(ctx context.Context) *Run {
	r, _ := ctx.Value(runKey{}).(*Run)
	if r == nil || r.t == nil {
		return nil
	}
	return r
}

// Begin puts the run's span in ctx (the execution's own context, which
// outlives any request) and returns the context the engine runs in: model
// and tool calls in it are the span's children, and log lines written with
// it carry the run's trace_id (LogHandler).
func (r *Run) Begin(ctx context.Context) context.Context {
	r.start, r.began = time.Now(), true
	ctx = trace.ContextWithSpan(ctx, r.span)
	if r.t == nil {
		return ctx
	}
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
	if r.t == nil {
		return
	}
	switch p := ev.Payload.(type) {
	case event.TextDeltaData:
		// A load before the swap: every token passes here, and a failed
		// compare-and-swap still takes the cache line for writing.
		if !r.first.Load() && !r.resumed.Load() && r.first.CompareAndSwap(false, true) {
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
	if r.t == nil {
		return
	}
	eng := r.engineName()
	if eng == "none" { // the router never chose: count the start here
		r.t.m.runsStarted.WithLabelValues(r.t.tenant(r.run.Tenant, eng)...).Inc()
	}
	r.t.m.runsExecuting.Dec()
	r.t.m.runsEnded.WithLabelValues(r.t.tenant(r.run.Tenant, eng, status)...).Inc()
	r.t.m.runDuration.WithLabelValues(eng, status).Observe(time.Since(r.start).Seconds())
	if status != chat.RunAwaitingInput {
		// The run's whole usage, once: a paused run's end carries it on.
		r.t.countUsage(r.run.Tenant, r.run.AgentID, usage)
	}

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

// countUsage adds an ended run's usage, per model, to the usage metrics.
func (t *Telemetry) countUsage(tenant, agent string, u event.Usage) {
	for _, m := range u.Models {
		for kind, n := range map[string]int{"input": m.InputTokens, "output": m.OutputTokens, "cached_input": m.CachedInputTokens, "reasoning": m.ReasoningTokens} {
			if n > 0 {
				t.m.usageTokens.WithLabelValues(t.tenant(tenant, m.Model, agent, kind)...).Add(float64(n))
			}
		}
		if m.Cost > 0 {
			t.m.usageCost.WithLabelValues(t.tenant(tenant, m.Model, agent, m.Currency)...).Add(float64(m.Cost) / 1e9)
		}
	}
}
