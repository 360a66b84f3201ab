package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Request observes one HTTP request routed to pattern (the ServeMux pattern,
// such as "GET /v1/agent/runs/{runId}"; empty when no route matched). It
// honours an incoming traceparent, starts the server span, and returns the
// request's context and the function to call with the status at the end.
func (t *Telemetry) Request(r *http.Request, pattern string) (context.Context, func(code int)) {
	ctx := r.Context()
	if t == nil {
		return ctx, func(int) {}
	}
	route := pattern
	if route == "" {
		route = "unmatched"
	}
	start := time.Now()
	ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
	ctx, span := t.tracer.Start(ctx, route, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.HTTPRoute(route), semconv.URLPath(r.URL.Path)))
	return ctx, func(code int) {
		t.m.httpRequests.WithLabelValues(route, strconv.Itoa(code)).Inc()
		t.m.httpDuration.WithLabelValues(route).Observe(time.Since(start).Seconds())
		span.SetAttributes(semconv.HTTPResponseStatusCode(code))
		if code >= 500 {
			span.SetStatus(codes.Error, http.StatusText(code))
		}
		span.End()
	}
}

// StreamOpened counts an open SSE stream of format until the returned
// function is called.
func (t *Telemetry) StreamOpened(format string) (closed func()) {
	if t == nil {
		return func() {}
	}
	g := t.m.streamsOpen.WithLabelValues(format)
	g.Inc()
	return g.Dec
}
