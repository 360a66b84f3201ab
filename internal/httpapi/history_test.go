package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below load on hosts without a zone database

	"github.com/agentchat/agentchat/internal/auth"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/config"
	"github.com/agentchat/agentchat/internal/dialect/agui/aguitest"
	"github.com/agentchat/agentchat/internal/httpapi"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/llm/openai"
	"github.com/agentchat/agentchat/internal/tool/builtin"
)

// inZone serves the same stack with history days cut in zone.
func (e *env) inZone(zone string) *env {
	e.t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		e.t.Fatal(err)
	}
	tokens, _ := config.ParseTokens("alice-token:acme:alice,bob-token:acme:bob,eve-token:evil:eve")
	api := httpapi.New(httpapi.Config{Runs: e.runs, Auth: auth.New(tokens, jwtSecret), HistoryLocation: loc})
	srv := httptest.NewServer(api)
	e.t.Cleanup(func() { api.Close(); srv.Close() })
	z := *e
	z.url, z.api, z.srv = srv.URL, api, srv
	return &z
}

func (e *env) history(query string) map[string]any {
	e.t.Helper()
	return e.call(req{method: "GET", path: "/api/v1/agent/history?" + query, token: alice}, 200)
}

func contents(h map[string]any) []string {
	var out []string
	for _, m := range h["messages"].([]any) {
		out = append(out, m.(map[string]any)["content"].(string))
	}
	return out
}

// Days are cut at midnight in the configured zone; pages go back a day at a time.
func TestHistoryDaysInAZone(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	sc := chat.Scope{Tenant: "acme", User: "alice"}
	ctx := context.Background()
	if _, err := e.store.CreateConversation(ctx, sc, chat.Conversation{ID: "t-days", Title: "days"}); err != nil {
		t.Fatal(err)
	}
	// 15:30Z is 23:30 in Shanghai (UTC+8), 16:30Z already the next day there.
	for _, m := range []struct {
		at   string
		text string
	}{
		{"2026-03-14T09:00:00Z", "fourteenth"},
		{"2026-03-15T15:30:00Z", "late on the fifteenth"},
		{"2026-03-15T16:30:00Z", "just after midnight in Shanghai"},
		{"2026-03-16T02:00:00Z", "morning of the sixteenth"},
	} {
		at, _ := time.Parse(time.RFC3339, m.at)
		if _, err := e.store.AppendMessage(ctx, sc, chat.Message{ConversationID: "t-days", Role: chat.RoleUser, Content: m.text, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	sh := e.inZone("Asia/Shanghai")
	tests := []struct {
		env    *env
		before string
		day    string
		want   []string
		more   bool
	}{
		{sh, "", "2026-03-16", []string{"just after midnight in Shanghai", "morning of the sixteenth"}, true},
		{sh, "2026-03-16", "2026-03-15", []string{"late on the fifteenth"}, true},
		{sh, "2026-03-15", "2026-03-14", []string{"fourteenth"}, false},
		{sh, "2026-03-14", "", nil, false},
		{e, "", "2026-03-16", []string{"morning of the sixteenth"}, true},
		{e, "2026-03-16", "2026-03-15", []string{"late on the fifteenth", "just after midnight in Shanghai"}, true},
	}
	for _, tt := range tests {
		h := tt.env.history("threadId=t-days&before=" + tt.before)
		if h["scope"] != "history_day" || h["threadId"] != "t-days" || h["day"] != tt.day || h["hasMore"] != tt.more ||
			!reflect.DeepEqual(contents(h), tt.want) || h["lastEventId"] != "0" {
			t.Errorf("%s before %q: %v", h["timeZone"], tt.before, h)
		}
	}
	e.apiError(req{method: "GET", path: "/api/v1/agent/history", token: alice}, 400, "missing_thread_id")
	e.apiError(req{method: "GET", path: "/api/v1/agent/history?threadId=t-days&before=16.03.2026", token: alice}, 400, "invalid_before")
	e.apiError(req{method: "GET", path: "/api/v1/agent/history?threadId=nope", token: alice}, 404, "thread_not_found")
}

// Seed 001 §6: load the history, follow the events from its lastEventId,
// merge by runId + messageId/toolCallId: nothing missing, nothing twice,
// even when the snapshot is taken mid-run.
func TestHistoryThenEventsMerge(t *testing.T) {
	t.Parallel()
	// run-3's answer stops after its first words until the client has
	// loaded the history and opened the events: mid-run on any machine.
	midRun := make(chan struct{})
	up := llmtest.NewOpenAIServer(t, llmtest.Options{Delay: 5 * time.Millisecond,
		Replies: []llmtest.Reply{
			{ToolCalls: []llmtest.ToolCall{{ID: "call_hook", Name: "send_webhook", Args: []string{`{"text":"hi"}`}}}},
			llmtest.TextReply(`{"answer":"Sent.","key_points":["sent"],"result_type":"execution_report","status":"success"}`),
			{Text: llmtest.Words(`{"answer":"A long answer that streams word by word while the client loads history.","status":"success"}`),
				Hold: midRun, HoldAfter: 4},
		}})
	m, err := openai.New(openai.Config{BaseURL: up.URL + "/v1", APIKey: "k", Model: "gpt-test", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := newHook(t)
	e := setup(t, options{model: m, builtin: builtin.Config{Webhook: builtin.WebhookConfig{URL: h.srv.URL}}})
	// A finished exchange with an interrupt: two AG-UI runs, a tool result.
	first := e.aguiRun(alice, input("t-merge", "run-1", userMsg("u1", "notify the hook")))
	in := first[len(first)-1].Data["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any)
	resumed := e.aguiRun(alice, resumeInput("t-merge", "run-2", in["id"].(string), "resolved", map[string]any{"approved": true}))
	// The continuation keeps the run's choices: a structured answer in JSON mode.
	if textOf(resumed) != "Sent." || fmt.Sprint(up.Requests()[1].Body["response_format"]) != "map[type:json_object]" {
		t.Fatalf("continuation streamed %q with response_format %v", textOf(resumed), up.Requests()[1].Body["response_format"])
	}
	// A run in progress: the snapshot is taken while its answer streams.
	rd, resp := e.aguiStream(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: input("t-merge", "run-3", userMsg("u3", "tell me more"))})
	defer resp.Body.Close()
	streamed := readAGUI(t, rd, true, func(ev aguitest.Event) bool { return ev.Type() == "TEXT_MESSAGE_CONTENT" })
	snap := e.history("threadId=t-merge")

	key := func(runID, id string) string { return runID + "/" + id }
	merged := map[string]int{}
	for _, raw := range snap["messages"].([]any) {
		m := raw.(map[string]any)
		merged[key(m["runId"].(string), m["messageId"].(string))]++
	}
	rd2, resp2 := e.aguiStream(req{method: "GET", path: "/api/v1/agent/runs/t-merge/events?after=" + snap["lastEventId"].(string), token: alice})
	defer resp2.Body.Close()
	close(midRun)
	evs := readAGUI(t, rd2, false, runEnds(1))
	aguitest.Verify(t, evs) // the snapshot resumes at a run boundary: the rest stands alone
	seen := map[string]bool{}
	for _, ev := range evs {
		switch ev.Type() {
		case "TEXT_MESSAGE_START", "TOOL_CALL_RESULT":
			if k := key(ev.Str("runId"), ev.Str("messageId")); !seen[k] {
				seen[k] = true
				if merged[k] == 0 {
					merged[k] = 1
				}
			}
		}
	}
	readAGUI(t, rd, true, nil) // let the run finish
	final := e.history("threadId=t-merge")
	want := map[string]int{}
	for _, raw := range final["messages"].([]any) {
		m := raw.(map[string]any)
		want[key(m["runId"].(string), m["messageId"].(string))]++
	}
	if !reflect.DeepEqual(merged, want) {
		t.Fatalf("history + events merged to\n%v\nthe finished thread is\n%v", merged, want)
	}
	// u1 and the call (run-1); the result and "Sent." (run-2); u3 and its answer (run-3).
	runs := map[string]int{}
	for k := range want {
		runs[strings.Split(k, "/")[0]]++
	}
	if !reflect.DeepEqual(runs, map[string]int{"run-1": 2, "run-2": 2, "run-3": 2}) {
		t.Fatalf("history keys %v", want)
	}
	// The ids line up with what the single endpoint streamed.
	if !strings.Contains(strings.Join(keys(want), " "), key("run-3", streamed[len(streamed)-1].Str("messageId"))) {
		t.Fatalf("run-3's answer %s is not in the history %v", streamed[len(streamed)-1].Str("messageId"), want)
	}
}

func keys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The events path and the history path give one message the same ui_schema,
// from the worker's ui_hints, through the one compiler.
func TestSameUISchemaOnBothPaths(t *testing.T) {
	t.Parallel()
	answer := `{"answer":"Sales rose.","key_points":["+12%"],"result_type":"execution_report","suggested_actions":["Show by region"],` +
		`"status":"success","ui_hints":{"blocks":[{"kind":"text"},{"kind":"table","columns":["month","sales"],"rows":[["Jan",10],["Feb",12]]},` +
		`{"kind":"chart","chart_type":"bar","labels":["Jan","Feb"],"series":[{"name":"sales","data":[10,12]}]},{"kind":"bogus","text":"kept as text"}]}}`
	up := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply(answer)}})
	m, err := openai.New(openai.Config{BaseURL: up.URL + "/v1", APIKey: "k", Model: "gpt-test", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, options{model: m})
	std := e.aguiRun(alice, input("t-ui", "run-1", userMsg("u1", "how were sales?")))
	if textOf(std) != "Sales rose." {
		t.Fatalf("streamed %q", textOf(std))
	}
	fromResult := std[len(std)-1].Data["result"].(map[string]any)["ui_schema"]

	rd, resp := e.aguiStream(req{method: "GET", path: "/api/v1/agent/runs/t-ui/events", token: alice})
	defer resp.Body.Close()
	var fromEvents any
	for _, ev := range readAGUI(t, rd, false, runEnds(1)) {
		if ev.Type() == "TEXT_MESSAGE_END" && ev.Data["ui_schema"] != nil {
			fromEvents = ev.Data["ui_schema"]
		}
	}
	var fromHistory any
	for _, raw := range e.history("threadId=t-ui")["messages"].([]any) {
		if m := raw.(map[string]any); m["role"] == "assistant" {
			fromHistory = m["ui_schema"]
			if m["answer"] != "Sales rose." || m["result_type"] != "execution_report" || m["status"] != "success" {
				t.Fatalf("history answer %v", m)
			}
		}
	}
	a, _ := json.Marshal(fromEvents)
	b, _ := json.Marshal(fromHistory)
	c, _ := json.Marshal(fromResult)
	if string(a) != string(b) || string(a) != string(c) {
		t.Fatalf("ui_schema differs:\nevents  %s\nhistory %s\nresult  %s", a, b, c)
	}
	for _, kind := range []string{`"kind":"table"`, `"kind":"chart"`, `"text":"kept as text"`, `"version":"1"`} {
		if !strings.Contains(string(a), kind) {
			t.Errorf("ui_schema lacks %s: %s", kind, a)
		}
	}
}
