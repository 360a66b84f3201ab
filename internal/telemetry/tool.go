package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ToolCall implements tool.CallObserver: each call is an execute_tool span
// under the run's span, counted and timed by tool and outcome.
func (t *Telemetry) ToolCall(ctx context.Context, name string) (context.Context, func(status string)) {
	if t == nil {
		return ctx, func(string) {}
	}
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name), semconv.GenAIToolType("function")))
	return ctx, func(status string) {
		t.m.toolCalls.WithLabelValues(name, status).Inc()
		t.m.toolDuration.WithLabelValues(name, status).Observe(time.Since(start).Seconds())
		if status == "failure" {
			span.SetStatus(codes.Error, "tool call failed")
		}
		span.SetAttributes(attribute.String("agentchat.tool.status", status))
		span.End()
	}
}
