package httpapi_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/engine/openclaw"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/tool"
	"github.com/agentchat/agentchat/internal/tool/builtin"
)

// gatewayReply plays an OpenClaw agent: it asks for the Feishu tool when the
// user asks to send something, summarises tool results, fails on "fail
// please", and otherwise greets.
func gatewayReply(r llmtest.Request) llmtest.Reply {
	msgs, _ := r.Body["messages"].([]any)
	if len(msgs) == 0 {
		return llmtest.Reply{Fail: llmtest.FailStatus, Status: http.StatusBadRequest}
	}
	last := msgs[len(msgs)-1].(map[string]any)
	content := fmt.Sprint(last["content"])
	switch {
	case last["role"] == "tool" && strings.Contains(content, "declined"):
		return llmtest.TextReply("Okay, I did not send it.")
	case last["role"] == "tool":
		return llmtest.TextReply("Done: the Feishu message was sent.")
	case strings.Contains(content, "fail please"):
		return llmtest.Reply{Fail: llmtest.FailStatus, Status: http.StatusBadGateway}
	case strings.Contains(strings.ToLower(content), "feishu"):
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_oc1", Name: "send_feishu_message", Args: []string{`{"text":`, `"deploy done"}`}}}}
	}
	return llmtest.TextReply("Hello from OpenClaw.")
}

type clawOptions struct {
	gateways map[string]openclaw.Gateway
	tenants  map[string]string
	fallback bool
	log      *slog.Logger
	o        options
}

// clawSetup starts the stack with the openclaw engine as the default.
func clawSetup(t *testing.T, c clawOptions) *env {
	t.Helper()
	c.o.engines = func(reg *tool.Registry, loc engine.Engine) map[string]engine.Engine {
		cfg := openclaw.Config{Gateways: c.gateways, Tenants: c.tenants, Default: "default", Tools: reg, Logger: c.log}
		if _, ok := c.gateways["default"]; !ok {
			cfg.Default = ""
		}
		if c.fallback {
			cfg.Fallback = loc
		}
		oc, err := openclaw.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]engine.Engine{"openclaw": oc}
	}
	c.o.router = func(r *engine.Router) { r.Default = "openclaw" }
	return setup(t, c.o)
}

func TestOpenClawHeadersAndTenants(t *testing.T) {
	t.Parallel()
	acmeGW := llmtest.NewOpenAIServer(t, llmtest.Options{Reply: gatewayReply})
	defaultGW := llmtest.NewOpenAIServer(t, llmtest.Options{Reply: gatewayReply})
	e := clawSetup(t, clawOptions{
		gateways: map[string]openclaw.Gateway{
			"acme":    {URL: acmeGW.URL, Token: "acme-gateway-root-token", AgentID: "support"},
			"default": {URL: defaultGW.URL + "/", Token: "default-gateway-root-token"},
		},
		tenants: map[string]string{"acme": "acme"},
	})
	first := e.uiChat(alice, transportBody("claw-chat", "submit-message", "", userMessage("u1", "hi")))
	if first.text() != "Hello from OpenClaw." || first.finishReason() != "stop" {
		t.Fatalf("first turn %v %q", first.types(), first.text())
	}
	conv := first.header.Get("X-Conversation-ID")
	e.uiChat(alice, transportBody("claw-chat", "submit-message", "", userMessage("u1", "hi"), userMessage("u2", "again")))
	e.chat(eve, map[string]any{"input": "hello from evil"})

	reqs := acmeGW.Requests()
	if len(reqs) != 2 {
		t.Fatalf("acme's gateway got %d requests", len(reqs))
	}
	for i, r := range reqs {
		h := r.Header
		if r.Path != "/v1/chat/completions" || h.Get("Authorization") != "Bearer acme-gateway-root-token" ||
			h.Get("X-Openclaw-Session-Key") != "agentchat:acme:"+conv || h.Get("X-Openclaw-Agent-Id") != "support" ||
			r.Body["model"] != "openclaw/support" || r.Body["stream"] != true {
			t.Fatalf("request %d: %s %v %v", i, r.Path, h, r.Body)
		}
	}
	// The gateway keeps the session: each run sends its own messages only.
	if msgs := reqs[1].Body["messages"].([]any); len(msgs) != 1 || msgs[0].(map[string]any)["content"] != "again" {
		t.Fatalf("second run sent %v", msgs)
	}
	// Another tenant's runs go to the default gateway with its token; acme's token never leaves for it.
	dreqs := defaultGW.Requests()
	if len(dreqs) != 1 || dreqs[0].Header.Get("Authorization") != "Bearer default-gateway-root-token" ||
		!strings.HasPrefix(dreqs[0].Header.Get("X-Openclaw-Session-Key"), "agentchat:evil:") || dreqs[0].Body["model"] != "openclaw/main" {
		t.Fatalf("default gateway got %v", dreqs)
	}
	for _, r := range dreqs {
		if strings.Contains(fmt.Sprint(r.Header)+string(r.Raw), "acme-gateway-root-token") {
			t.Fatal("acme's gateway token reached another gateway")
		}
	}
}

// The same client script as on the local engine: the confirmation flow and
// its key fields do not depend on the engine.
func TestOpenClawSameClientScript(t *testing.T) {
	t.Parallel()
	gw := llmtest.NewOpenAIServer(t, llmtest.Options{Reply: gatewayReply})
	hook := newFeishu(t)
	e := clawSetup(t, clawOptions{
		gateways: map[string]openclaw.Gateway{"default": {URL: gw.URL, Token: "tok"}},
		o:        options{builtin: builtin.Config{Feishu: builtin.FeishuConfig{WebhookURL: hook.srv.URL}}},
	})
	_, approved := approvalRoundTrip(t, e, "claw-approve", true)
	if approved.text() != "Done: the Feishu message was sent." || len(hook.texts()) != 1 || hook.texts()[0] != "deploy done" {
		t.Fatalf("approved: %q, webhook %v", approved.text(), hook.texts())
	}
	_, denied := approvalRoundTrip(t, e, "claw-deny", false)
	if denied.text() != "Okay, I did not send it." || len(hook.texts()) != 1 {
		t.Fatalf("denied: %q, webhook %v", denied.text(), hook.texts())
	}
	// The gateway saw the tools offered, and the tool result went back in the same session.
	reqs := gw.Requests()
	if tools, _ := reqs[0].Body["tools"].([]any); len(tools) == 0 {
		t.Fatalf("no tools offered: %v", reqs[0].Body)
	}
	if reqs[0].Header.Get("X-Openclaw-Session-Key") != reqs[1].Header.Get("X-Openclaw-Session-Key") {
		t.Fatal("the continuation used another session")
	}
	// The native stream keeps its contract too.
	frames := e.chat(alice, map[string]any{"input": "hi"})
	if got := names(frames); got[0] != "conversation.created" || got[1] != "agent.start" || last(frames).Data["status"] != "succeeded" {
		t.Fatalf("native on openclaw: %v", got)
	}
}

func TestOpenClawCancelClosesUpstream(t *testing.T) {
	t.Parallel()
	arrived := make(chan llmtest.Request, 1)
	gw := llmtest.NewOpenAIServer(t, llmtest.Options{
		Replies:   []llmtest.Reply{{Text: llmtest.Words("one two three four five"), Fail: llmtest.FailStall, FailAfter: 3}},
		OnRequest: func(r llmtest.Request) { arrived <- r },
	})
	e := clawSetup(t, clawOptions{gateways: map[string]openclaw.Gateway{"default": {URL: gw.URL}}})
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "go on"}})
	defer resp.Body.Close()
	readNative(t, rd, "agent.delta")
	up := <-arrived
	e.call(req{method: "POST", path: "/v1/agent/runs/" + resp.Header.Get("X-Run-ID") + "/cancel", token: alice}, 200)
	select {
	case <-up.Gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway request stayed open after the run was cancelled")
	}
	rest := readNative(t, rd, "")
	if end := last(rest); end.Event != "agent.end" || end.Data["status"] != "cancelled" {
		t.Fatalf("end %v", end)
	}
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestOpenClawFailures(t *testing.T) {
	t.Parallel()
	const token = "gateway-root-secret-0123"
	tests := []struct {
		name     string
		reply    llmtest.Reply
		fallback bool
		status   string
		errors   bool // the stream shows an error
		text     string
	}{
		{"refused, no fallback", llmtest.Reply{Fail: llmtest.FailStatus, Status: http.StatusUnauthorized}, false, "failed", true, ""},
		{"refused, fallback", llmtest.Reply{Fail: llmtest.FailStatus, Status: http.StatusServiceUnavailable}, true, "succeeded", false, "offline demo model"},
		{"cut before the first token, fallback", llmtest.Reply{Text: llmtest.Words("never seen"), Fail: llmtest.FailCut, FailAfter: 1}, true, "succeeded", false, "offline demo model"},
		{"cut mid-answer, fallback configured", llmtest.Reply{Text: llmtest.Words("half an answer that stops"), Fail: llmtest.FailCut, FailAfter: 3}, true, "failed", true, "half an"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gw := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: []llmtest.Reply{tc.reply}})
			var logs syncBuffer
			e := clawSetup(t, clawOptions{
				gateways: map[string]openclaw.Gateway{"default": {URL: gw.URL, Token: token}},
				fallback: tc.fallback,
				log:      slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			})
			frames := e.chat(alice, map[string]any{"input": "hello"})
			end := last(frames)
			_, errored := find(frames, "error")
			var text strings.Builder
			for _, f := range frames {
				if f.Event == "agent.delta" {
					text.WriteString(fmt.Sprint(f.Data["delta"]))
				}
			}
			if end.Event != "agent.end" || end.Data["status"] != tc.status || errored != tc.errors || !strings.Contains(text.String(), tc.text) {
				t.Fatalf("%v, end %v, text %q", names(frames), end.Data, text.String())
			}
			for _, f := range frames {
				if strings.Contains(fmt.Sprint(f.Data), token) {
					t.Fatalf("the gateway token is in the stream: %v", f.Data)
				}
			}
			tl := e.call(req{method: "GET", path: "/v1/agent/runs/" + frames[1].Data["runId"].(string) + "/timeline", token: alice}, 200)
			for _, ev := range tl["events"].([]any) {
				if strings.Contains(fmt.Sprint(ev), token) {
					t.Fatal("the gateway token is in the timeline")
				}
			}
			if strings.Contains(logs.String(), token) {
				t.Fatalf("the gateway token is in the logs:\n%s", logs.String())
			}
			if tc.fallback && tc.status == "succeeded" && !strings.Contains(logs.String(), "fallback") {
				t.Fatalf("the fallback was not logged:\n%s", logs.String())
			}
		})
	}
}

// A tenant routed to openclaw with no gateway of its own, and no default
// gateway, fails cleanly; one with a rule for local stays local.
func TestOpenClawRouting(t *testing.T) {
	t.Parallel()
	gw := llmtest.NewOpenAIServer(t, llmtest.Options{Reply: gatewayReply})
	e := clawSetup(t, clawOptions{
		gateways: map[string]openclaw.Gateway{"acme": {URL: gw.URL}},
		tenants:  map[string]string{"acme": "acme"},
	})
	frames := e.chat(eve, map[string]any{"input": "hi"})
	if end := last(frames).Data; end["status"] != "failed" || !strings.Contains(fmt.Sprint(end["error"]), "gateway") {
		t.Fatalf("eve without a gateway: %v", end)
	}
	frames = e.chat(alice, map[string]any{"input": "hi", "engine": "local"})
	msg, _ := find(frames, "agent.message")
	if !strings.Contains(fmt.Sprint(msg.Data["content"]), "offline demo model") || gw.Count() != 0 {
		t.Fatalf("engine local asked for: %v (gateway calls %d)", msg.Data, gw.Count())
	}
	frames = e.chat(alice, map[string]any{"input": "hi"})
	if msg, _ := find(frames, "agent.message"); msg.Data["content"] != "Hello from OpenClaw." {
		t.Fatalf("acme by default: %v", msg.Data)
	}
}
