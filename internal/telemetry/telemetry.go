package telemetry

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/agentchat/agentchat/internal/store"
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
	// Writer, when set, is the store's serial writer (SQLite's one write
	// connection), whose busy time is exported at every scrape.
	Writer store.SerialWriter
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
	if cfg.Writer != nil {
		t.reg.MustRegister(writerCollector{cfg.Writer})
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
