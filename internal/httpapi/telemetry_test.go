package httpapi_test

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentchat/agentchat/internal/tool/builtin"
)

// scrape reads /metrics from the test server and returns each sample line
// (name{labels} → value).
func (e *env) scrape() map[string]float64 {
	e.t.Helper()
	resp := e.send(req{method: "GET", path: "/metrics", token: metricsToken})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			e.t.Fatalf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func TestMetricsMoveWithARun(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})

	// Without the token /metrics is refused on the main listener.
	e.apiError(req{method: "GET", path: "/metrics", token: alice}, 401, "unauthorized")

	before := e.scrape()
	frames := e.chat(alice, map[string]any{"input": "What time is it in Tokyo?"})
	if end := last(frames); end.Event != "agent.end" || end.Data["status"] != "succeeded" {
		t.Fatalf("run did not succeed: %v", names(frames))
	}
	after := e.scrape()

	moved := func(series string, min float64) {
		t.Helper()
		if d := after[series] - before[series]; d < min {
			t.Errorf("%s moved by %v, want at least %v", series, d, min)
		}
	}
	moved(`agentchat_runs_started_total{engine="local"}`, 1)
	moved(`agentchat_runs_ended_total{engine="local",status="succeeded"}`, 1)
	moved(`agentchat_run_duration_seconds_count{engine="local",status="succeeded"}`, 1)
	moved(`agentchat_run_time_to_first_token_seconds_count{engine="local"}`, 1)
	moved(`agentchat_llm_calls_total{model="scripted",outcome="ok"}`, 2) // the tool call, then the answer
	moved(`agentchat_llm_tokens_total{direction="input",model="scripted"}`, 1)
	moved(`agentchat_llm_tokens_total{direction="output",model="scripted"}`, 1)
	moved(`agentchat_tool_calls_total{outcome="success",tool="get_current_time"}`, 1)
	moved(`agentchat_tool_call_duration_seconds_count{outcome="success",tool="get_current_time"}`, 1)
	moved(`agentchat_event_log_batch_size_count`, 1)
	moved(`agentchat_event_log_commit_seconds_count`, 1)
	moved(`agentchat_http_requests_total{code="200",route="POST /v1/agent/chat"}`, 1)
	// SQLite's one write connection counts its work: the run's start and
	// end (group-committed), its events, the stream's look at the last seq.
	moved(`agentchat_store_writer_transactions_total{part="runs"}`, 2)
	moved(`agentchat_store_writer_writes_total{part="runs"}`, 2)
	moved(`agentchat_store_writer_transactions_total{part="events"}`, 1)
	moved(`agentchat_store_writer_writes_total{part="events"}`, 3)
	if after[`agentchat_store_writer_busy_seconds_total{part="events"}`] <= before[`agentchat_store_writer_busy_seconds_total{part="events"}`] {
		t.Errorf("the event log's busy time did not grow")
	}
	if after[`agentchat_store_up`] != 1 || after[`agentchat_bus_up`] != 1 || after[`agentchat_runs_executing`] != 0 {
		t.Errorf("store_up %v bus_up %v executing %v", after[`agentchat_store_up`], after[`agentchat_bus_up`], after[`agentchat_runs_executing`])
	}
	// Routes are patterns, never raw paths with ids in them.
	for series := range after {
		if strings.Contains(series, "route=") && strings.Contains(series, "/v1/agent/runs/0") {
			t.Errorf("raw path in a label: %s", series)
		}
		if strings.Contains(series, "acme") {
			t.Errorf("tenant id in a label without the setting: %s", series)
		}
	}
}

func TestReadyzReportsStoreBusAndDraining(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	ready := e.call(req{method: "GET", path: "/readyz"}, 200)
	if ready["status"] != "ready" || ready["store"].(map[string]any)["status"] != "up" || ready["bus"].(map[string]any)["status"] != "up" {
		t.Fatalf("readyz %v", ready)
	}
	e.api.Drain()
	draining := e.call(req{method: "GET", path: "/readyz"}, 503)
	if draining["status"] != "draining" || draining["store"].(map[string]any)["status"] != "up" {
		t.Fatalf("readyz while draining %v", draining)
	}
	// Liveness is not readiness: the process is still alive.
	e.call(req{method: "GET", path: "/healthz"}, 200)
}

// attrs flattens a span's attributes.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

func TestRunSpanTree(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	hook := newFeishu(t)
	e := setup(t, options{tracer: tp, builtin: builtin.Config{Feishu: builtin.FeishuConfig{WebhookURL: hook.srv.URL}}})

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice,
		header: map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"},
		body:   map[string]any{"input": "What time is it in Tokyo?"}})
	frames := readNative(t, rd, "")
	resp.Body.Close()
	if end := last(frames); end.Data["status"] != "succeeded" {
		t.Fatalf("run %v", names(frames))
	}

	var run sdktrace.ReadOnlySpan
	spans := exp.GetSpans().Snapshots()
	for _, s := range spans {
		if s.Name() == "invoke_agent agentchat" {
			run = s
		}
	}
	if run == nil {
		t.Fatalf("no run span among %d spans", len(spans))
	}
	if got := run.SpanContext().TraceID().String(); got != traceID {
		t.Fatalf("run trace %s, want the caller's %s", got, traceID)
	}
	ra := attrs(run)
	if ra["gen_ai.operation.name"].AsString() != "invoke_agent" || ra["gen_ai.provider.name"].AsString() != "scripted" ||
		ra["gen_ai.request.model"].AsString() != "scripted" || ra["gen_ai.usage.output_tokens"].AsInt64() < 1 ||
		ra["gen_ai.response.finish_reasons"].AsStringSlice() == nil || ra["agentchat.engine"].AsString() != "local" {
		t.Fatalf("run span attributes %v", ra)
	}
	var chats, tools int
	for _, s := range spans {
		if s.Parent().SpanID() != run.SpanContext().SpanID() {
			continue
		}
		a := attrs(s)
		switch {
		case s.Name() == "chat scripted":
			chats++
			if a["gen_ai.operation.name"].AsString() != "chat" || a["gen_ai.usage.input_tokens"].AsInt64() < 1 || len(a["gen_ai.response.finish_reasons"].AsStringSlice()) != 1 {
				t.Errorf("chat span attributes %v", a)
			}
		case s.Name() == "execute_tool get_current_time":
			tools++
			if a["gen_ai.operation.name"].AsString() != "execute_tool" || a["gen_ai.tool.name"].AsString() != "get_current_time" {
				t.Errorf("tool span attributes %v", a)
			}
		}
	}
	if chats != 2 || tools != 1 {
		t.Fatalf("under the run: %d chat spans, %d tool spans; want 2 and 1", chats, tools)
	}

	// A tool that waits for a person: the continuing run records the wait.
	exp.Reset()
	_, cid, rest, closeStream := awaitConfirmation(t, e, alice, "deploy done")
	defer closeStream()
	e.call(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "approve"}}, 200)
	if end := last(rest()); end.Data["status"] != "succeeded" {
		t.Fatalf("continuation did not succeed")
	}
	var waited, sent bool
	for _, s := range exp.GetSpans().Snapshots() {
		waited = waited || s.Name() == "await_confirmation send_feishu_message"
		sent = sent || s.Name() == "execute_tool send_feishu_message"
	}
	if !waited || !sent {
		t.Fatalf("after approval: wait span %v, tool span %v", waited, sent)
	}
}
