package httpapi_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/engine/chain"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/llm/openai"
	"github.com/agentchat/agentchat/internal/llm/scripted"
	"github.com/agentchat/agentchat/internal/tool"
)

var update = flag.Bool("update", false, "rewrite golden files")

// chainFrame is one frame of the chain stream, checked to be exactly
// `event:`, `id:`, `data:` and a blank line.
type chainFrame struct {
	Event, ID string
	Data      string
	Env       map[string]any
}

// chainReader reads chain frames as raw lines, so the three-line shape is
// checked, skipping the retry hint and keep-alive comments.
type chainReader struct {
	t  *testing.T
	br *bufio.Reader
}

func (r *chainReader) next() (chainFrame, bool) {
	r.t.Helper()
	for {
		var lines []string
		for {
			line, err := r.br.ReadString('\n')
			if err == io.EOF && line == "" && len(lines) == 0 {
				return chainFrame{}, false
			}
			if err != nil {
				r.t.Fatalf("stream cut mid-frame: %v %q", err, lines)
			}
			line = strings.TrimSuffix(line, "\n")
			if line == "" {
				break
			}
			lines = append(lines, line)
		}
		if len(lines) == 0 {
			continue
		}
		if len(lines) == 1 && (strings.HasPrefix(lines[0], ":") || strings.HasPrefix(lines[0], "retry: ")) {
			continue
		}
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "id: ") || !strings.HasPrefix(lines[2], "data: ") {
			r.t.Fatalf("frame is not event/id/data: %q", lines)
		}
		f := chainFrame{Event: lines[0][7:], ID: lines[1][4:], Data: lines[2][6:]}
		if err := json.Unmarshal([]byte(f.Data), &f.Env); err != nil {
			r.t.Fatalf("data %s: %v", f.Data, err)
		}
		keys := 6 // seed 003's envelope; final adds the run's usage when it used any
		if _, ok := f.Env["usage"]; ok && f.Event == "final" {
			keys++
		}
		if len(f.Env) != keys || f.Env["evt"] != f.Event || f.Env["schema"] != "v1" || strconv.Itoa(int(f.Env["seq"].(float64))) != f.ID {
			r.t.Fatalf("envelope %s", f.Data)
		}
		if _, err := time.Parse(time.RFC3339, f.Env["ts"].(string)); err != nil || !strings.HasSuffix(f.Env["ts"].(string), "Z") {
			r.t.Fatalf("ts %v", f.Env["ts"])
		}
		return f, true
	}
}

// readAll reads frames to the end of the stream, or through the first
// frame matching stop.
func (r *chainReader) readAll(stop func(chainFrame) bool) []chainFrame {
	var out []chainFrame
	for {
		f, ok := r.next()
		if !ok {
			return out
		}
		out = append(out, f)
		if stop != nil && stop(f) {
			return out
		}
	}
}

func chainSetup(t *testing.T, o options) *env {
	t.Helper()
	if o.model == nil {
		o.model = scripted.New(scripted.Config{TokenDelay: -1})
	}
	o.engines = func(reg *tool.Registry, loc engine.Engine) map[string]engine.Engine {
		model := o.model
		return map[string]engine.Engine{"chain": chain.New(chain.Config{Model: model, Tools: reg, Executor: loc})}
	}
	return setup(t, o)
}

func (e *env) chain(path string, header map[string]string) (*chainReader, *http.Response) {
	e.t.Helper()
	resp := e.send(req{method: "GET", path: path, token: alice, header: header})
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
	}
	if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		e.t.Fatalf("headers %v", resp.Header)
	}
	timer := time.AfterFunc(streamBound, func() { resp.Body.Close() }) // a hang becomes a failure
	e.t.Cleanup(func() {
		timer.Stop()
		resp.Body.Close()
	})
	return &chainReader{t: e.t, br: bufio.NewReader(resp.Body)}, resp
}

func chainPath(input string, maxSteps int) string {
	q := url.Values{"user_input": {input}}
	if maxSteps > 0 {
		q.Set("max_steps", strconv.Itoa(maxSteps))
	}
	return "/v1/chain/stream?" + q.Encode()
}

var (
	tsRe    = regexp.MustCompile(`"(ts|expiresAt)":"[^"]*"`)
	traceRe = regexp.MustCompile(`"trace_id":"[^"]*"`)
	confRe  = regexp.MustCompile(`"confirmationId":"[^"]*"`)
	// The offline model's usage is estimated from the text it was sent,
	// which holds ids and times: the golden keeps its fields, not its counts.
	tokensRe = regexp.MustCompile(`"(inputTokens|outputTokens|totalTokens|reasoningTokens|cachedInputTokens)":\d+`)
)

// golden renders frames with times and ids replaced, and compares them
// with testdata/chain/<name>.golden.
func golden(t *testing.T, name string, frames []chainFrame) {
	t.Helper()
	var b strings.Builder
	for _, f := range frames {
		d := tsRe.ReplaceAllString(f.Data, `"$1":"<time>"`)
		d = traceRe.ReplaceAllString(d, `"trace_id":"<run>"`)
		d = confRe.ReplaceAllString(d, `"confirmationId":"<confirmation>"`)
		d = tokensRe.ReplaceAllString(d, `"$1":"<n>"`)
		b.WriteString("event: " + f.Event + "\nid: " + f.ID + "\ndata: " + d + "\n\n")
	}
	path := filepath.Join("testdata", "chain", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != b.String() {
		t.Errorf("%s differs (run with -update to accept):\n got:\n%s\nwant:\n%s", path, b.String(), want)
	}
}

func evts(frames []chainFrame) []string {
	var out []string
	for _, f := range frames {
		out = append(out, f.Event)
	}
	return out
}

// TestChainGolden streams every path of the chain with the offline model.
func TestChainGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		input    string
		maxSteps int
		want     []string
		final    string // a substring of the final text
	}{
		{"success", "Please calculate 2+2", 0,
			[]string{"chain.step", "planner.plan", "chain.step", "call.start", "call.end", "chain.step", "check.summary", "final"}, "The result is 2+2 = 4."},
		{"check_loops_back", "Please calculate 2+2, fail check once", 0,
			[]string{"chain.step", "planner.plan", "chain.step", "call.start", "call.end", "chain.step", "check.summary",
				"chain.step", "call.start", "call.end", "chain.step", "check.summary", "final"}, "The result is 2+2 = 4."},
		{"limit_with_result", "Please calculate 2+2, always fail check", 3,
			[]string{"chain.step", "planner.plan", "chain.step", "call.start", "call.end", "chain.step", "check.summary", "final"}, "The result is 2+2 = 4."},
		{"limit_without_result", "Please calculate 2+2", 1,
			[]string{"chain.step", "planner.plan", "final"}, "已达到最大步数限制（1）"},
		{"hard_limit", "写一个周报", 50, []string{"final"}, "CHAIN_HARD_LIMIT"},
		{"tool_error", "Please fetch http://127.0.0.1:9/secret", 0,
			[]string{"chain.step", "planner.plan", "chain.step", "call.start", "call.end", "chain.step", "check.summary", "final"}, "The http_get tool failed"},
		{"invalid_plan", "Make an invalid plan", 0, []string{"chain.step", "error", "final"}, "The planner did not produce a valid plan"},
		{"invalid_plan_once", "Make an invalid plan once, then calculate 2+2", 0,
			[]string{"chain.step", "planner.plan", "chain.step", "call.start", "call.end", "chain.step", "check.summary", "final"}, "The result is 2+2 = 4."},
		{"model_failure", "fail please", 0, []string{"chain.step", "planner.plan", "chain.step", "error", "final"}, "The model provider is unavailable."},
	}
	e := chainSetup(t, options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rd, _ := e.chain(chainPath(tt.input, tt.maxSteps), nil)
			frames := rd.readAll(nil)
			if got := evts(frames); !slices.Equal(got, tt.want) {
				t.Fatalf("events %v\nwant   %v", got, tt.want)
			}
			for i, f := range frames {
				if f.ID != strconv.Itoa(i+1) {
					t.Fatalf("frame %d has id %s", i, f.ID)
				}
				if f.Env["trace_id"] != frames[0].Env["trace_id"] {
					t.Fatalf("trace_id changes")
				}
			}
			if final := frames[len(frames)-1].Env["payload"].(string); !strings.Contains(final, tt.final) {
				t.Errorf("final %q, want it to contain %q", final, tt.final)
			}
			golden(t, tt.name, frames)
		})
	}
}

// TestChainResume: Last-Event-ID N on the same URL continues at N+1 with the
// same frames; after the last frame the server answers 204 (EventSource
// stops reconnecting).
func TestChainResume(t *testing.T) {
	t.Parallel()
	e := chainSetup(t, options{})
	path := chainPath("Please calculate 6*7", 0)
	rd, resp := e.chain(path, nil)
	all := rd.readAll(nil)
	runID := resp.Header.Get("X-Run-ID")
	if len(all) != 8 || runID == "" {
		t.Fatalf("%d frames, run %q", len(all), runID)
	}
	// The same URL with Last-Event-ID: the chain it started, after frame 3.
	for _, path := range []string{path, "/v1/chain/stream?run_id=" + runID} {
		rd, resp := e.chain(path, map[string]string{"Last-Event-ID": "3"})
		rest := rd.readAll(nil)
		if resp.Header.Get("X-Run-ID") != runID || len(rest) != 5 {
			t.Fatalf("%s: run %s, %d frames after 3", path, resp.Header.Get("X-Run-ID"), len(rest))
		}
		for i, f := range rest {
			if f.Data != all[3+i].Data || f.ID != all[3+i].ID {
				t.Fatalf("frame %s differs:\n%s\n%s", f.ID, f.Data, all[3+i].Data)
			}
		}
		resp = e.send(req{method: "GET", path: path, token: alice, header: map[string]string{"Last-Event-ID": "8"}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("after the final frame: %d", resp.StatusCode)
		}
	}
	// Without a position the same URL starts a new chain.
	rd, resp = e.chain(path, nil)
	if again := rd.readAll(nil); resp.Header.Get("X-Run-ID") == runID || len(again) != 8 {
		t.Fatalf("a fresh request reattached")
	}
	// Another principal's chain is not found.
	e.apiError(req{method: "GET", path: "/v1/chain/stream?run_id=" + runID, token: bob}, 404, "run_not_found")
}

// TestChainConfirmation: a tool that needs a person pauses the chain with
// call.start awaiting_input; the stream stays open; a reconnect continues
// where it left off; the decision continues the chain to its final frame.
func TestChainConfirmation(t *testing.T) {
	t.Parallel()
	e := chainSetup(t, options{ping: 20 * time.Millisecond})
	path := chainPath(`Send a webhook saying "deploy done"`, 0)
	rd, resp := e.chain(path, nil)
	first := rd.readAll(func(f chainFrame) bool {
		p, _ := f.Env["payload"].(map[string]any)
		return f.Event == "call.start" && p["status"] == "awaiting_input"
	})
	awaiting := first[len(first)-1].Env["payload"].(map[string]any)
	cid, _ := awaiting["confirmationId"].(string)
	if cid == "" || awaiting["name"] != "send_webhook" {
		t.Fatalf("awaiting call.start %v", awaiting)
	}
	resp.Body.Close() // the client leaves; the chain waits
	// Reconnect from the frame before the awaiting one: it comes again, then keep-alives.
	n := len(first)
	rd, _ = e.chain(path, map[string]string{"Last-Event-ID": strconv.Itoa(n - 1)})
	again, _ := rd.next()
	if again.ID != strconv.Itoa(n) || again.Data != first[n-1].Data {
		t.Fatalf("reconnect gave %s %s", again.ID, again.Data)
	}
	// While the chain waits, the stream stays open with keep-alive comments.
	if line, err := rd.br.ReadString('\n'); err != nil || line != ": keep-alive\n" {
		t.Fatalf("while waiting: %q %v", line, err)
	}
	e.call(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "approve"}}, 200)
	rest := rd.readAll(nil)
	all := append(first, rest...)
	golden(t, "confirmation", all)
	want := []string{"chain.step", "planner.plan", "chain.step", "call.start", "call.start", "call.start", "call.end", "chain.step", "check.summary", "final"}
	if got := evts(all); !slices.Equal(got, want) {
		t.Fatalf("events %v", got)
	}
}

// TestChainRequests: bad requests are JSON errors before any stream; POST
// takes a body.
func TestChainRequests(t *testing.T) {
	t.Parallel()
	e := chainSetup(t, options{})
	e.apiError(req{method: "GET", path: "/v1/chain/stream", token: alice}, 400, "missing_field")
	e.apiError(req{method: "GET", path: "/v1/chain/stream?user_input=", token: alice}, 400, "missing_field")
	e.apiError(req{method: "GET", path: "/v1/chain/stream?user_input=hi&max_steps=x", token: alice}, 400, "invalid_field")
	e.apiError(req{method: "POST", path: "/v1/chain/stream", token: alice, body: `{"max_steps":2}`}, 400, "missing_field")
	e.apiError(req{method: "GET", path: "/v1/chain/stream?user_input=hi"}, 401, "unauthorized")
	e.apiError(req{method: "GET", path: "/v1/chain/stream?user_input=hi", token: alice, header: map[string]string{"X-Tenant-ID": "evil"}}, 403, "tenant_forbidden")

	resp := e.send(req{method: "POST", path: "/v1/chain/stream", token: alice, body: map[string]any{"user_input": "Please calculate 1+2", "max_steps": 3}})
	defer resp.Body.Close()
	frames := (&chainReader{t: t, br: bufio.NewReader(resp.Body)}).readAll(nil)
	if len(frames) == 0 || frames[len(frames)-1].Env["payload"] != "The result is 1+2 = 3." {
		t.Fatalf("POST chain %v", evts(frames))
	}
	// EventSource's way in: the token in the query, the tenant header as sent.
	resp = e.send(req{method: "GET", path: chainPath("Please calculate 1+2", 0) + "&access_token=" + alice, header: map[string]string{"X-Tenant-ID": "acme"}})
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("access_token: %d", resp.StatusCode)
	}
	// The chain is a run: in the timeline, with its steps.
	runID := resp.Header.Get("X-Run-ID")
	(&chainReader{t: t, br: bufio.NewReader(resp.Body)}).readAll(nil)
	tl := e.call(req{method: "GET", path: "/v1/agent/runs/" + runID + "/timeline", token: alice}, 200)
	if tl["status"] != "succeeded" {
		t.Fatalf("timeline %v", tl)
	}
}

// TestChainOpenAI plays the chain with an OpenAI-compatible model (a fake
// upstream): an unusable plan is retried once, fenced JSON is accepted, the
// executor is offered only the tools the plan selected.
func TestChainOpenAI(t *testing.T) {
	t.Parallel()
	plan := "```json\n" + `{"execution_chain":["executor","check"],"mcp_config":["calculator"],"instructions":"Compute 6*7."}` + "\n```"
	tests := []struct {
		name    string
		replies []llmtest.Reply
		want    []string
		final   string
	}{
		{"retried plan", []llmtest.Reply{
			llmtest.TextReply("Sure! First I will think about it."),
			llmtest.TextReply(plan),
			{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "calculator", Args: []string{`{"expression":`, `"6*7"}`}}}},
			llmtest.TextReply("It is 42."),
			llmtest.TextReply(`{"judge":true,"score":95,"reasoning":"Correct.","tool_assessments":[{"name":"calculator","status":"success"}]}`),
		}, []string{"chain.step", "planner.plan", "chain.step", "call.start", "call.end", "chain.step", "check.summary", "final"}, "It is 42."},
		{"plan reaching outside the configuration", []llmtest.Reply{
			llmtest.TextReply(`{"execution_chain":["executor"],"mcp_config":[{"url":"http://203.0.113.7/mcp"}],"instructions":"x"}`),
			llmtest.TextReply(`{"execution_chain":["executor"],"mcp_config":["mcp:evil"],"instructions":"x"}`),
		}, []string{"chain.step", "error", "final"}, "The planner did not produce a valid plan after two attempts"},
		{"no check in the plan", []llmtest.Reply{
			llmtest.TextReply(`{"execution_chain":["executor"],"mcp_config":[],"instructions":"Say hi."}`),
			llmtest.TextReply("Hi."),
		}, []string{"chain.step", "planner.plan", "chain.step", "final"}, "Hi."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			up := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: tt.replies})
			m, err := openai.New(openai.Config{BaseURL: up.URL + "/v1", APIKey: "k", Model: "gpt-test", MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			e := chainSetup(t, options{model: m})
			rd, _ := e.chain(chainPath("What is 6*7?", 0), nil)
			frames := rd.readAll(nil)
			if got := evts(frames); !slices.Equal(got, tt.want) {
				t.Fatalf("events %v", got)
			}
			if final := frames[len(frames)-1].Env["payload"].(string); !strings.Contains(final, tt.final) {
				t.Fatalf("final %q", final)
			}
			reqs := up.Requests()
			for i, r := range reqs {
				format, _ := r.Body["response_format"].(map[string]any)
				planner := i < 2 && strings.Contains(string(r.Raw), "WorkflowPlan")
				if planner && format["type"] != "json_object" {
					t.Errorf("request %d: response_format %v", i, r.Body["response_format"])
				}
				if tools, ok := r.Body["tools"].([]any); ok && !planner {
					if len(tools) != 1 || tools[0].(map[string]any)["function"].(map[string]any)["name"] != "calculator" {
						t.Errorf("executor offered %v", tools)
					}
				}
			}
		})
	}
}

// TestChainIsARun: a chain is cancellable, and the native and AG-UI
// streams show it too (steps as STEP_*, plan and check as CUSTOM).
func TestChainIsARun(t *testing.T) {
	t.Parallel()
	e := chainSetup(t, options{})
	rd, resp := e.chain(chainPath(`Send a webhook saying "cancel me"`, 0), nil)
	rd.readAll(func(f chainFrame) bool {
		p, _ := f.Env["payload"].(map[string]any)
		return p["status"] == "awaiting_input"
	})
	runID, conv := resp.Header.Get("X-Run-ID"), resp.Header.Get("X-Conversation-ID")
	if r := e.call(req{method: "POST", path: "/v1/agent/runs/" + runID + "/cancel", token: alice}, 200); r["status"] != "cancelled" {
		t.Fatalf("the run is %v after cancelling", r["status"])
	}
	// The call that waited ends with its run (issue 11), then the chain.
	rest := rd.readAll(nil)
	if len(rest) != 2 || rest[0].Event != "call.end" || rest[1].Event != "final" || rest[1].Env["payload"] != "The run was cancelled." {
		t.Fatalf("after cancel %v", evts(rest))
	}
	if p, _ := rest[0].Env["payload"].(map[string]any); p["status"] != "error" {
		t.Fatalf("the waiting call ended %v", rest[0].Env["payload"])
	}

	ag, _ := e.aguiStream(req{method: "GET", path: "/api/v1/agent/runs/" + conv + "/events", token: alice})
	evs := readAGUI(t, ag, false, runEnds(1))
	var seen []string
	for _, ev := range evs {
		switch ev.Type() {
		case "STEP_STARTED":
			seen = append(seen, ev.Str("stepName"))
		case "CUSTOM":
			seen = append(seen, "custom:"+ev.Str("name"))
		}
	}
	// on_interrupt: the AG-UI stream names the wait for CopilotKit's useInterrupt.
	if want := []string{"router", "worker", "planner", "custom:plan", "executor", "custom:on_interrupt"}; !slices.Equal(seen, want) {
		t.Errorf("AG-UI shows %v, want %v", seen, want)
	}
	nat, _ := e.stream(req{method: "GET", path: "/v1/agent/runs/" + runID + "/events", token: alice})
	if fs := readNative(t, nat, ""); last(fs).Event != "agent.end" || last(fs).Data["status"] != "cancelled" {
		t.Errorf("native ends %v", last(fs))
	}
}

// TestChainConfirmationSurvivesRestart: the chain's progress is stored with
// the executor's; after a restart the decision continues the same chain,
// and its frames go on with the same numbering.
func TestChainConfirmationSurvivesRestart(t *testing.T) {
	t.Parallel()
	first := chainSetup(t, options{})
	rd, resp := first.chain(chainPath(`Send a webhook saying "after restart"`, 0), nil)
	before := rd.readAll(func(f chainFrame) bool {
		p, _ := f.Env["payload"].(map[string]any)
		return p["status"] == "awaiting_input"
	})
	cid := before[len(before)-1].Env["payload"].(map[string]any)["confirmationId"].(string)
	runID := resp.Header.Get("X-Run-ID")
	resp.Body.Close()
	first.stop()

	second := chainSetup(t, options{dbPath: first.dbPath})
	second.call(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "approve"}}, 200)
	rd, _ = second.chain("/v1/chain/stream?run_id="+runID, map[string]string{"Last-Event-ID": before[len(before)-1].ID})
	rest := rd.readAll(nil)
	if got := evts(rest); !slices.Equal(got, []string{"call.start", "call.end", "chain.step", "check.summary", "final"}) {
		t.Fatalf("after restart %v", got)
	}
	// Every frame, before and after the restart, carries the run's trace.
	trace := second.call(req{method: "GET", path: "/v1/agent/runs/" + runID, token: alice}, 200)["traceId"]
	for i, f := range before {
		if envTrace(f.Env) != trace {
			t.Fatalf("frame %d before the restart: trace %v, the run's %v", i, f.Env["trace_id"], trace)
		}
	}
	for i, f := range rest {
		if f.ID != strconv.Itoa(len(before)+1+i) || envTrace(f.Env) != trace {
			t.Fatalf("frame %d: id %s, trace %v, the run's %v", i, f.ID, f.Env["trace_id"], trace)
		}
	}
}
