package openclaw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/engine/openclaw"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/llm/openai"
	"github.com/agentchat/agentchat/internal/telemetry"
	"github.com/agentchat/agentchat/internal/tool"
	"github.com/agentchat/agentchat/internal/tool/builtin"
)

// host records what a run does.
type host struct {
	mu     sync.Mutex
	events []event.Event
	msgs   []chat.Message
}

func (h *host) Emit(_ context.Context, ev event.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
}

func (h *host) AppendMessage(_ context.Context, m chat.Message) (chat.Message, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m.ID = chat.NewID()
	h.msgs = append(h.msgs, m)
	return m, nil
}

func (h *host) RequestConfirmation(_ context.Context, c chat.Confirmation) (chat.Confirmation, error) {
	c.ID = chat.NewID()
	return c, nil
}

// UpdateState patches an empty state: these runs keep none.
func (h *host) UpdateState(_ context.Context, patch json.RawMessage) (json.RawMessage, error) {
	next, _, err := chat.PatchState(nil, patch)
	return next, err
}

func task(tenant string) engine.Task {
	return engine.Task{
		Scope: chat.Scope{Tenant: tenant, User: "u"}, Run: chat.Run{ID: "run-2"}, Conversation: chat.Conversation{ID: "conv-1"},
		History: []chat.Message{
			{Role: chat.RoleUser, Content: "earlier", RunID: "run-1"},
			{Role: chat.RoleAssistant, Content: "earlier answer", RunID: "run-1"},
			{Role: chat.RoleUser, Content: "now", RunID: "run-2"},
		},
	}
}

func TestNewChecksConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]openclaw.Config{
		"credentials in the URL": {Gateways: map[string]openclaw.Gateway{"g": {URL: "http://user:secret@127.0.0.1:1"}}},
		"not http":               {Gateways: map[string]openclaw.Gateway{"g": {URL: "ftp://127.0.0.1"}}},
		"unknown tenant gateway": {Gateways: map[string]openclaw.Gateway{"g": {URL: "http://127.0.0.1:1"}}, Tenants: map[string]string{"acme": "h"}},
		"unknown default":        {Gateways: map[string]openclaw.Gateway{"g": {URL: "http://127.0.0.1:1"}}, Default: "h"},
	} {
		if _, err := openclaw.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error repeats the URL's secret: %v", name, err)
		}
	}
}

func TestSessionAndHistory(t *testing.T) {
	t.Parallel()
	gw := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply("hi")}})
	for _, full := range []bool{false, true} {
		e, err := openclaw.New(openclaw.Config{Gateways: map[string]openclaw.Gateway{"g": {URL: gw.URL, SendHistory: full}}, Default: "g"})
		if err != nil {
			t.Fatal(err)
		}
		h := &host{}
		if o := e.Execute(context.Background(), task("acme"), h); o.Status != engine.StatusSucceeded {
			t.Fatalf("outcome %+v", o)
		}
		r := gw.Requests()[len(gw.Requests())-1]
		if r.Header.Get("X-Openclaw-Session-Key") != openclaw.SessionKey("acme", "conv-1") || openclaw.SessionKey("acme", "conv-1") != "agentchat:acme:conv-1" {
			t.Fatalf("session %q", r.Header.Get("X-Openclaw-Session-Key"))
		}
		want := 1
		if full {
			want = 3
		}
		if msgs := r.Body["messages"].([]any); len(msgs) != want {
			t.Fatalf("sendHistory=%v sent %v", full, msgs)
		}
	}
}

// A gateway redirecting elsewhere does not take its token along.
func TestNoRedirects(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(other.Close)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(gw.Close)
	e, err := openclaw.New(openclaw.Config{Gateways: map[string]openclaw.Gateway{"g": {URL: gw.URL, Token: "root-token"}}, Default: "g"})
	if err != nil {
		t.Fatal(err)
	}
	o := e.Execute(context.Background(), task("acme"), &host{})
	if o.Status != engine.StatusFailed || elsewhere.Load() != 0 {
		t.Fatalf("outcome %+v, redirected requests %d", o, elsewhere.Load())
	}
	if strings.Contains(o.Error.Message, "root-token") {
		t.Fatalf("error %v", o.Error)
	}
}

// Each gateway call is a chat span under the run's span, made by the same
// telemetry wrapper as the local engine's model calls.
func TestGatewayCallsAreModelSpans(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	tel := telemetry.New(telemetry.Config{TracerProvider: tp})
	gw := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply("hi")}})
	e, err := openclaw.New(openclaw.Config{Gateways: map[string]openclaw.Gateway{"g": {URL: gw.URL}}, Default: "g", Telemetry: tel})
	if err != nil {
		t.Fatal(err)
	}
	tk := task("acme")
	tr := tel.NewRun(context.Background())
	tr.Bind(tk.Run)
	ctx := tr.Begin(context.Background())
	o := e.Execute(ctx, tk, &host{})
	tr.End(o.Status, o.Error, o.Usage)
	if o.Status != engine.StatusSucceeded {
		t.Fatalf("outcome %+v", o)
	}
	var run, call sdktrace.ReadOnlySpan
	for _, s := range exp.GetSpans().Snapshots() {
		switch s.Name() {
		case "invoke_agent agentchat":
			run = s
		case "chat openclaw/main":
			call = s
		}
	}
	if run == nil || call == nil {
		t.Fatalf("spans %v", exp.GetSpans().Snapshots())
	}
	attrs := map[attribute.Key]attribute.Value{}
	for _, kv := range call.Attributes() {
		attrs[kv.Key] = kv.Value
	}
	if call.Parent().SpanID() != run.SpanContext().SpanID() || attrs["gen_ai.operation.name"].AsString() != "chat" ||
		attrs["gen_ai.provider.name"].AsString() != openclaw.Provider || attrs["gen_ai.request.model"].AsString() != "openclaw/main" {
		t.Fatalf("gateway call span under %s (run %s): %v", call.Parent().SpanID(), run.SpanContext().SpanID(), attrs)
	}
}

// An agent naming a gateway runs there, whatever its tenant's gateway; the
// gateway is the model (the agent's own model is not called) and the
// agent's instructions and tool subset go with the call.
func TestAgentPicksTheGateway(t *testing.T) {
	t.Parallel()
	tenantGW := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply("from the tenant's gateway")}})
	agentGW := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply("from the agent's gateway")}})
	model := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply("from the agent's model")}})
	agentModel, err := openai.New(openai.Config{BaseURL: model.URL + "/v1", Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(tool.RegistryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := builtin.Register(reg, builtin.Config{}); err != nil {
		t.Fatal(err)
	}
	e, err := openclaw.New(openclaw.Config{Gateways: map[string]openclaw.Gateway{"acme-claw": {URL: tenantGW.URL}, "sales-claw": {URL: agentGW.URL, AgentID: "sales"}},
		Tenants: map[string]string{"acme": "acme-claw"}, Tools: reg})
	if err != nil {
		t.Fatal(err)
	}
	tk := task("acme")
	tk.Agent = &engine.Agent{ID: "a1", Version: 3, Model: agentModel, Instructions: "Sell politely.", Engine: "openclaw", Gateway: "sales-claw",
		Tools: &engine.AllowedTools{Names: []string{"calculator"}}}
	if o := e.Execute(context.Background(), tk, &host{}); o.Status != engine.StatusSucceeded {
		t.Fatalf("outcome %+v", o)
	}
	if len(tenantGW.Requests()) != 0 || len(model.Requests()) != 0 || len(agentGW.Requests()) != 1 {
		t.Fatalf("requests: tenant's gateway %d, agent's model %d, agent's gateway %d", len(tenantGW.Requests()), len(model.Requests()), len(agentGW.Requests()))
	}
	r := agentGW.Requests()[0]
	msgs := r.Body["messages"].([]any)
	if r.Body["model"] != "openclaw/sales" || !strings.Contains(fmt.Sprint(msgs[0]), "Sell politely.") {
		t.Fatalf("the gateway got model %v, messages %v", r.Body["model"], msgs)
	}
	if tools := fmt.Sprint(r.Body["tools"]); !strings.Contains(tools, "calculator") || strings.Contains(tools, "http_get") {
		t.Fatalf("tools offered %s", tools)
	}
}
