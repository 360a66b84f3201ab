// Package telemetry is agentchat's operational signals: Prometheus metrics
// and OpenTelemetry traces, defined in one place and fed at a few
// well-defined points (the HTTP middleware, each run's execution, the model
// adapter, the tool registry, the event log's store and the bus).
//
// Invariants:
//   - A nil *Telemetry (and a nil *Run) is valid and records nothing, so
//     packages and tests that do not care pass nothing.
//   - Metric labels are bounded: route patterns (never raw paths), engine,
//     status, model, tool, format. Tenant ids become a label only when
//     Config.TenantLabels says so, since a deployment with many tenants would
//     otherwise grow a series per tenant.
//   - Spans follow the OpenTelemetry GenAI semantic conventions: a run is an
//     invoke_agent span, each model call a chat span, each tool call an
//     execute_tool span, each wait for a person an await_confirmation span.
package telemetry

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Config configures the signals.
type Config struct {
	// TracerProvider makes the spans; nil means no tracing.
	TracerProvider trace.TracerProvider
	// Propagator reads incoming trace context; nil means W3C traceparent and baggage.
	Propagator propagation.TextMapPropagator
	// TenantLabels adds a tenant label to the run and token series.
	TenantLabels bool
	// Health, when set, is asked at every scrape for the store's and the
	// bus's availability (agentchat_store_up, agentchat_bus_up).
	Health *Health
	// ProcessMetrics adds the Go runtime and process collectors.
	ProcessMetrics bool
}

// Telemetry holds the metrics registry and the tracer. Create it with New.
type Telemetry struct {
	reg          *prometheus.Registry
	tracer       trace.Tracer
	prop         propagation.TextMapPropagator
	tenantLabels bool
	m            metrics
}

// instrumentation names the tracer, as the OpenTelemetry API asks.
const instrumentation = "github.com/agentchat/agentchat"

// New builds the metrics and the tracer.
func New(cfg Config) *Telemetry {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	prop := cfg.Propagator
	if prop == nil {
		prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	t := &Telemetry{reg: prometheus.NewRegistry(), tracer: tp.Tracer(instrumentation), prop: prop, tenantLabels: cfg.TenantLabels}
	t.m = newMetrics(t.reg, cfg.TenantLabels)
	if cfg.Health != nil {
		t.reg.MustRegister(cfg.Health.collector())
	}
	if cfg.ProcessMetrics {
		t.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return t
}

// Registry is the Prometheus registry every series lives in.
func (t *Telemetry) Registry() *prometheus.Registry { return t.reg }

// Handler serves the metrics in the Prometheus text (or OpenMetrics) format.
func (t *Telemetry) Handler() http.Handler {
	if t == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(t.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// tenant returns the tenant label values to append: none unless enabled.
func (t *Telemetry) tenant(id string, vals ...string) []string {
	if t.tenantLabels {
		return append(vals, id)
	}
	return vals
}
