// Package telemetry is agentchat's operational signals: Prometheus metrics
// and OpenTelemetry traces, defined in one place and fed at a few
// well-defined points (the HTTP middleware, each run's execution, the model
// adapter, the tool registry, the event log's store and the bus), and
// read at scrape time from the store's serial writer (SQLite's one write
// connection: how long each kind of work held it).
//
// Invariants:
//   - A nil *Telemetry is valid and records nothing, so packages and tests
//     that do not care pass nothing. The Run it makes still carries the run's
//     trace context: every run has a trace id, traced or not.
//   - Metric labels are bounded: route patterns (never raw paths), engine,
//     status, model, tool, format. Tenant ids become a label only when
//     Config.TenantLabels says so, since a deployment with many tenants would
//     otherwise grow a series per tenant.
//   - Spans follow the OpenTelemetry GenAI semantic conventions: a run is an
//     invoke_agent span, each model call a chat span, each tool call an
//     execute_tool span, each wait for a person an await_confirmation span.
//   - Concurrency: a Telemetry and a Health are safe for concurrent use. A Run
//     belongs to one execution, which calls Bind (or Abort), Begin, Event… and
//     End in order; the model and tool wrappers may add to it from that execution's
//     other goroutines, so it guards its own state.
//   - Ownership: the wrappers (Model, Store, Bus) only observe: they change no
//     result and own nothing, so the caller still closes what it wrapped.
//     The tracer provider passed in is the caller's to shut down.
//   - Security: a failed check answers a short public reason; its cause
//     (Check.Err) goes to the log only.
package telemetry
