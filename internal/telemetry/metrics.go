package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are every series agentchat exports. Names follow the Prometheus
// conventions: a unit suffix, _total on counters.
type metrics struct {
	runsStarted   *prometheus.CounterVec   // engine [tenant]
	runsEnded     *prometheus.CounterVec   // engine, status [tenant]
	runsExecuting prometheus.Gauge         //
	ttft          *prometheus.HistogramVec // engine
	runDuration   *prometheus.HistogramVec // engine, status
	streamsOpen   *prometheus.GaugeVec     // format

	modelCalls *prometheus.CounterVec // model, outcome
	tokens     *prometheus.CounterVec // model, direction [tenant]
	// usageTokens (model, agent, kind [tenant]) and usageCost (model,
	// agent, currency [tenant]) count ended runs' usage.
	usageTokens, usageCost *prometheus.CounterVec

	toolCalls    *prometheus.CounterVec   // tool, outcome
	toolDuration *prometheus.HistogramVec // tool, outcome

	confirmRequested *prometheus.CounterVec // tool
	confirmDecided   *prometheus.CounterVec // decision

	logBatch     prometheus.Histogram
	logCommit    prometheus.Histogram
	logErrors    prometheus.Counter
	publishError prometheus.Counter

	httpRequests *prometheus.CounterVec   // route, code
	httpDuration *prometheus.HistogramVec // route
}

// Buckets for model-paced latencies: a first token in tens of milliseconds
// (local models) to a minute (a slow provider under load).
var (
	latencyBuckets = []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	runBuckets     = []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	commitBuckets  = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}
	batchBuckets   = prometheus.ExponentialBuckets(1, 2, 12) // 1 … 2048 (the log's batch cap is 2000)
)

func newMetrics(reg *prometheus.Registry, tenantLabels bool) metrics {
	withTenant := func(labels ...string) []string {
		if tenantLabels {
			return append(labels, "tenant")
		}
		return labels
	}
	f := func(c prometheus.Collector) prometheus.Collector { reg.MustRegister(c); return c }
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return f(prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "agentchat", Name: name, Help: help}, labels)).(*prometheus.CounterVec)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return f(prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "agentchat", Name: name, Help: help, Buckets: buckets}, labels)).(*prometheus.HistogramVec)
	}
	return metrics{
		runsStarted: counter("runs_started_total", "Runs (and resumed runs) that began executing, by engine.", withTenant("engine")...),
		runsEnded:   counter("runs_ended_total", "Run executions that ended, by engine and status (succeeded, failed, cancelled, awaiting_input).", withTenant("engine", "status")...),
		runsExecuting: f(prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "agentchat", Name: "runs_executing",
			Help: "Runs executing in this process now."})).(prometheus.Gauge),
		ttft:        histogram("run_time_to_first_token_seconds", "Time from a run's start to its first streamed text, by engine.", latencyBuckets, "engine"),
		runDuration: histogram("run_duration_seconds", "Time a run execution took until it ended or paused, by engine and status.", runBuckets, "engine", "status"),
		streamsOpen: f(prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "agentchat", Name: "streams_open",
			Help: "SSE streams open now, by wire format."}, []string{"format"})).(*prometheus.GaugeVec),

		modelCalls: counter("llm_calls_total", "Model calls, by model and outcome (ok, error).", "model", "outcome"),
		tokens:     counter("llm_tokens_total", "Model tokens, by model and direction (input, output).", withTenant("model", "direction")...),
		usageTokens: counter("usage_tokens_total", "Tokens of ended runs as recorded for usage, by model, agent (\"\" for none) and kind (input, output, cached_input, reasoning).",
			withTenant("model", "agent", "kind")...),
		usageCost: counter("usage_cost_total", "Cost of ended runs as recorded for usage, in units of currency, by model, agent and currency.",
			withTenant("model", "agent", "currency")...),

		toolCalls:    counter("tool_calls_total", "Tool calls, by tool and outcome (success, failure, partial).", "tool", "outcome"),
		toolDuration: histogram("tool_call_duration_seconds", "Tool call latency, by tool and outcome.", latencyBuckets, "tool", "outcome"),

		confirmRequested: counter("confirmations_requested_total", "Tool calls that waited for a person's decision, by tool. Pending = requested - decided.", "tool"),
		confirmDecided:   counter("confirmations_decided_total", "Decisions that continued a waiting run, by decision (approve, reject).", "decision"),

		logBatch: f(prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "agentchat", Name: "event_log_batch_size",
			Help: "Events per event-log commit.", Buckets: batchBuckets})).(prometheus.Histogram),
		logCommit: f(prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "agentchat", Name: "event_log_commit_seconds",
			Help: "Latency of one event-log commit.", Buckets: commitBuckets})).(prometheus.Histogram),
		logErrors: f(prometheus.NewCounter(prometheus.CounterOpts{Namespace: "agentchat", Name: "event_log_commit_errors_total",
			Help: "Event-log commits the store refused or could not take."})).(prometheus.Counter),
		publishError: f(prometheus.NewCounter(prometheus.CounterOpts{Namespace: "agentchat", Name: "bus_publish_errors_total",
			Help: "Events the bus failed to publish (streams catch up from the log)."})).(prometheus.Counter),

		httpRequests: counter("http_requests_total", "HTTP requests, by route pattern and status code.", "route", "code"),
		httpDuration: histogram("http_request_duration_seconds", "HTTP request latency by route pattern (for streams, how long they stayed open).", prometheus.DefBuckets, "route"),
	}
}
