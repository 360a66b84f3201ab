// Package openclaw is the remote engine: a run executes on an OpenClaw
// Gateway, driven over the gateway's OpenAI-compatible Chat Completions
// endpoint (POST <gateway>/v1/chat/completions with stream:true).
//
// The gateway is the model of an agent loop (package local's), so its stream
// is normalised into the same canonical events, messages and confirmations as
// a local run, and every wire format works unchanged: text and reasoning
// deltas stream as they come, and when the gateway answers with tool calls
// (a gateway that forwards client tools) they run here, under this server's
// confirmation policy, before the results go back to the gateway.
//
// Each request carries:
//   - Authorization: Bearer <the gateway's token>. A gateway token is a root
//     credential: it is sent to its own gateway's URL only (redirects are
//     refused), never logged, and never put in an error message.
//   - model "openclaw/<agentId>" and the x-openclaw-agent-id header (older
//     gateways read the header).
//   - x-openclaw-session-key "agentchat:<tenant>:<conversation id>": one
//     gateway session per conversation, in a namespace of our own. Since the
//     gateway keeps the conversation in that session, only the current run's
//     messages are sent (the user's input, then the run's tool exchanges);
//     Gateway.SendHistory sends the whole stored conversation instead.
//
// A run uses the gateway its agent names (engine.Agent.Gateway), else its
// tenant's (Config.Tenants), else the default one. The gateway is the
// run's model whatever the agent's model is; the agent's instructions,
// tool subset, confirmations and iteration bound apply.
// Cancelling a run cancels its request context, which closes the upstream
// request: that is how the gateway learns to abort. A gateway that fails
// before its first token (refused, unreachable, an error status, a stream
// that ends before any output) hands a new run to Config.Fallback when one
// is set; nothing of the failed attempt reaches the run's events. A failure
// after the first token ends the run failed, with the partial answer kept.
package openclaw

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/engine/local"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/openai"
	"github.com/agentchat/agentchat/internal/telemetry"
	"github.com/agentchat/agentchat/internal/tool"
)

// DefaultAgentID is the OpenClaw agent a gateway entry names when it names none.
const DefaultAgentID = "main"

// Provider is the GenAI provider name of gateway calls on their spans
// (gen_ai.provider.name); their model is "openclaw/<agentId>".
const Provider = "openclaw"

// Gateway is one OpenClaw Gateway.
type Gateway struct {
	// URL is the gateway's root, e.g. http://127.0.0.1:18789; requests go to
	// URL/v1/chat/completions.
	URL string
	// Token is the gateway's bearer token (gateway.auth.token); empty sends none.
	Token string
	// AgentID is the OpenClaw agent that answers. Default DefaultAgentID.
	AgentID string
	// SendHistory sends the whole stored conversation with every call, for a
	// gateway that keeps no session.
	SendHistory bool
	// NoTools offers the gateway none of this server's tools.
	NoTools bool
	// SystemPrompt, when set, is sent first (the gateway adds it to its agent's prompt).
	SystemPrompt string
}

// Config configures the engine.
type Config struct {
	// Gateways by name.
	Gateways map[string]Gateway
	// Tenants maps a tenant to the name of its gateway.
	Tenants map[string]string
	// Default names the gateway of tenants not in Tenants; "" leaves them none.
	Default string
	// Tools are the tools offered to the gateway and run here.
	Tools *tool.Registry
	// MaxIterations bounds gateway calls per run. Default engine.DefaultMaxIterations.
	MaxIterations int
	// Fallback executes a new run whose gateway fails before its first token,
	// or whose tenant has no gateway. Nil: such runs fail.
	Fallback engine.Engine
	// Timeout bounds the wait for the gateway to start answering. Default 60s.
	Timeout time.Duration
	// Retries of a refused call (429, 5xx, unreachable) before the first
	// token. Default 0: a failing gateway falls back at once.
	Retries int
	// Transport makes the HTTP requests. Default http.DefaultTransport.
	Transport http.RoundTripper
	Logger    *slog.Logger
	// Telemetry makes each gateway call a chat span under the run's span and
	// counts its tokens, as for the local engine's model; nil records nothing.
	Telemetry *telemetry.Telemetry
}

// Engine runs conversations on OpenClaw gateways. It is safe for concurrent runs.
type Engine struct {
	gateways map[string]*gateway
	tenants  map[string]string
	def      string
	tools    *tool.Registry
	maxIter  int
	fallback engine.Engine
	log      *slog.Logger
}

type gateway struct {
	name  string
	cfg   Gateway
	model llm.Model
}

var _ engine.Engine = (*Engine)(nil)

// New checks cfg and returns the engine.
func New(cfg Config) (*Engine, error) {
	e := &Engine{
		gateways: map[string]*gateway{}, tenants: cfg.Tenants, def: cfg.Default, tools: cfg.Tools,
		maxIter: cmp.Or(cfg.MaxIterations, engine.DefaultMaxIterations), fallback: cfg.Fallback, log: cfg.Logger,
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	base := cmp.Or[http.RoundTripper](cfg.Transport, http.DefaultTransport)
	for name, g := range cfg.Gateways {
		g.AgentID = cmp.Or(g.AgentID, DefaultAgentID)
		u, err := url.Parse(g.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return nil, fmt.Errorf("openclaw gateway %q: the URL must be http(s)://host[:port] without credentials", name)
		}
		client := &http.Client{
			Transport: &headers{base: base, agentID: g.AgentID},
			// The token must reach this gateway only.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		retries := cfg.Retries
		if retries == 0 {
			retries = -1
		}
		m, err := openai.New(openai.Config{
			BaseURL: strings.TrimRight(g.URL, "/") + "/v1", APIKey: g.Token, Model: "openclaw/" + g.AgentID,
			Timeout: cfg.Timeout, MaxRetries: retries, HTTPClient: client,
		})
		if err != nil {
			return nil, fmt.Errorf("openclaw gateway %q: %w", name, err)
		}
		// A gateway may strip the usage of the models behind it: the meter
		// estimates the calls that report none.
		metered := llm.Metered(m, Provider, "openclaw/"+g.AgentID, nil)
		e.gateways[name] = &gateway{name: name, cfg: g, model: cfg.Telemetry.Model(metered, Provider, "openclaw/"+g.AgentID)}
	}
	for tenant, name := range cfg.Tenants {
		if _, ok := e.gateways[name]; !ok {
			return nil, fmt.Errorf("openclaw: tenant %q names gateway %q, which is not configured", tenant, name)
		}
	}
	if cfg.Default != "" && e.gateways[cfg.Default] == nil {
		return nil, fmt.Errorf("openclaw: the default gateway %q is not configured", cfg.Default)
	}
	return e, nil
}

// gatewayFor is the gateway a run uses: its agent's, else its tenant's,
// else the default.
func (e *Engine) gatewayFor(t engine.Task) *gateway {
	if t.Agent != nil && t.Agent.Gateway != "" {
		return e.gateways[t.Agent.Gateway]
	}
	tenant := t.Scope.Tenant
	if name, ok := e.tenants[tenant]; ok {
		return e.gateways[name]
	}
	return e.gateways[e.def]
}

// SessionKey is the x-openclaw-session-key of a conversation.
func SessionKey(tenant, conversationID string) string {
	return "agentchat:" + tenant + ":" + conversationID
}

// Execute runs or resumes t on the tenant's gateway.
func (e *Engine) Execute(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome {
	log := telemetry.RunLogger(e.log, t.Run).With("conversation_id", t.Conversation.ID)
	g := e.gatewayFor(t)
	if g == nil {
		if e.fallback != nil && t.Resume == nil {
			log.Info("no OpenClaw gateway for this tenant; running on the fallback engine", "tenant", t.Scope.Tenant)
			return e.fallback.Execute(ctx, t, h)
		}
		return engine.Outcome{Status: engine.StatusFailed, Error: &event.ErrorInfo{
			Code: errcode.EngineUnavailable, Message: "No OpenClaw gateway is configured for this workspace.",
		}}
	}
	task := t
	if t.Agent != nil {
		ag := *t.Agent
		ag.Model = nil // the gateway is the model
		task.Agent = &ag
	}
	if !g.cfg.SendHistory {
		task.History = ofRun(t.History, t.Run.ID)
	}
	tools := e.tools
	if g.cfg.NoTools {
		tools = nil
	}
	agent := local.New(local.Config{Model: g.model, Tools: tools, MaxIterations: e.maxIter, SystemPrompt: g.cfg.SystemPrompt, Logger: e.log})
	ctx = context.WithValue(ctx, sessionKey{}, SessionKey(t.Scope.Tenant, t.Conversation.ID))
	if e.fallback == nil || t.Resume != nil {
		// A resumed run has run a person's decision already: it stays here.
		return agent.Execute(ctx, task, h)
	}
	hold := &firstOutput{h: h}
	o := agent.Execute(ctx, task, hold)
	if hold.failedSilent(ctx, o) {
		log.Warn("OpenClaw gateway failed before its first token; running on the fallback engine",
			"gateway", g.name, "code", o.Error.Code)
		return e.fallback.Execute(ctx, t, h)
	}
	hold.release(ctx)
	return o
}

// ofRun keeps the messages of one run.
func ofRun(history []chat.Message, runID string) []chat.Message {
	var out []chat.Message
	for _, m := range history {
		if m.RunID == runID {
			out = append(out, m)
		}
	}
	return out
}

// firstOutput is the host of a run that may still fall back: it holds the
// run's events until the gateway's first output, so that a gateway failing
// before it leaves no trace, and passes everything through after it.
type firstOutput struct {
	h engine.Host

	mu     sync.Mutex
	live   bool
	held   []event.Event
	errors bool // an error was reported while holding
}

func (f *firstOutput) Emit(ctx context.Context, ev event.Event) {
	f.mu.Lock()
	if f.live {
		f.mu.Unlock()
		f.h.Emit(ctx, ev)
		return
	}
	switch ev.Payload.(type) {
	case event.TextDeltaData, event.ReasoningDeltaData, event.ToolCallStartedData, event.ToolCallArgsData,
		event.ToolCallReadyData, event.MessageCompletedData:
		f.goLive(ctx)
		f.mu.Unlock()
		f.h.Emit(ctx, ev)
		return
	case event.ErrorData:
		f.errors = true
	}
	f.held = append(f.held, ev)
	f.mu.Unlock()
}

// goLive emits what was held; f.mu is held.
func (f *firstOutput) goLive(ctx context.Context) {
	f.live = true
	for _, ev := range f.held {
		f.h.Emit(ctx, ev)
	}
	f.held = nil
}

func (f *firstOutput) AppendMessage(ctx context.Context, m chat.Message) (chat.Message, error) {
	f.mu.Lock()
	if !f.live {
		f.goLive(ctx)
	}
	f.mu.Unlock()
	return f.h.AppendMessage(ctx, m)
}

func (f *firstOutput) RequestConfirmation(ctx context.Context, c chat.Confirmation) (chat.Confirmation, error) {
	return f.h.RequestConfirmation(ctx, c)
}

func (f *firstOutput) UpdateState(ctx context.Context, patch json.RawMessage) (json.RawMessage, error) {
	return f.h.UpdateState(ctx, patch)
}

// failedSilent reports whether the run failed before any output, for a
// reason other than its own end (a cancel, a shutdown).
func (f *firstOutput) failedSilent(ctx context.Context, o engine.Outcome) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.live && f.errors && o.Status == engine.StatusFailed && o.Error != nil && ctx.Err() == nil
}

// release emits what is still held (a run that ended without output).
func (f *firstOutput) release(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.live {
		f.goLive(ctx)
	}
}

type sessionKey struct{}

// headers adds the OpenClaw routing headers to each gateway request: the
// agent, and the session of the run's conversation (from the context).
type headers struct {
	base    http.RoundTripper
	agentID string
}

func (h *headers) RoundTrip(r *http.Request) (*http.Response, error) {
	key, _ := r.Context().Value(sessionKey{}).(string)
	if key == "" {
		return nil, errors.New("openclaw: a request without a session")
	}
	r = r.Clone(r.Context())
	r.Header.Set("X-Openclaw-Agent-Id", h.agentID)
	r.Header.Set("X-Openclaw-Session-Key", key)
	return h.base.RoundTrip(r)
}
