package httpapi_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/llm/openai"
)

// openaiModel is the real OpenAI adapter pointed at a fake upstream.
// numberedModel is an OpenAI-compatible fake upstream answering
// "Answer <n>." to its n-th request, so a test tells answers apart.
func numberedModel(t *testing.T) (llm.Model, *llmtest.Server) {
	t.Helper()
	var n atomic.Int64
	return openaiModel(t, llmtest.Options{Reply: func(llmtest.Request) llmtest.Reply {
		return llmtest.TextReply(fmt.Sprintf("Answer %d.", n.Add(1)))
	}}, openai.Config{})
}

func openaiModel(t *testing.T, opts llmtest.Options, cfg openai.Config) (llm.Model, *llmtest.Server) {
	t.Helper()
	up := llmtest.NewOpenAIServer(t, opts)
	cfg.BaseURL, cfg.APIKey, cfg.Model = up.URL+"/v1", "sk-test-secret-key", "gpt-test"
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = -1
	}
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, up
}

func seqOf(t *testing.T, f native) int64 {
	t.Helper()
	n, err := strconv.ParseInt(f.ID, 10, 64)
	if err != nil {
		t.Fatalf("frame %s has id %q", f.Event, f.ID)
	}
	return n
}

func TestChatSucceeds(t *testing.T) {
	t.Parallel()
	model, _ := openaiModel(t, llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply("Hello there, how can I help?")}}, openai.Config{})
	e := setup(t, options{model: model})
	frames := e.chat(alice, map[string]any{"input": "hi", "title": "Greeting"})
	got := names(frames)
	want := []string{"conversation.created", "agent.start", "agent.delta", "agent.delta", "agent.delta", "agent.delta", "agent.delta", "agent.delta", "agent.message", "agent.end"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	for i := 1; i < len(frames); i++ {
		if seqOf(t, frames[i]) <= seqOf(t, frames[i-1]) {
			t.Fatalf("ids not increasing: %s then %s", frames[i-1].ID, frames[i].ID)
		}
	}
	conv := frames[0].Data["conversationId"].(string)
	start := frames[1].Data
	if start["conversationId"] != conv || start["runId"] == "" || start["turnId"] == "" {
		t.Fatalf("agent.start %v", start)
	}
	var text strings.Builder
	for _, f := range frames {
		if f.Event == "agent.delta" {
			text.WriteString(f.Data["delta"].(string))
		}
	}
	msg, _ := find(frames, "agent.message")
	if text.String() != "Hello there, how can I help?" || msg.Data["content"] != text.String() {
		t.Fatalf("deltas %q, message %v", text.String(), msg.Data)
	}
	if end := last(frames).Data; end["status"] != "succeeded" || end["error"] != nil {
		t.Fatalf("end %v", end)
	}
	runID := start["runId"].(string)

	msgs := e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/messages", token: alice}, 200)["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("messages %v", msgs)
	}
	user, asst := msgs[0].(map[string]any), msgs[1].(map[string]any)
	if user["role"] != "user" || user["content"] != "hi" || user["runId"] != runID || asst["role"] != "assistant" || asst["content"] != text.String() || asst["runId"] != runID {
		t.Fatalf("stored %v / %v", user, asst)
	}
	r := e.call(req{method: "GET", path: "/v1/agent/runs/" + runID, token: alice}, 200)
	if r["status"] != "succeeded" || r["endedAt"] == "" || r["usage"].(map[string]any)["outputTokens"] == nil {
		t.Fatalf("run %v", r)
	}

	// The timeline is what was streamed.
	tl := e.call(req{method: "GET", path: "/v1/agent/runs/" + runID + "/timeline", token: alice}, 200)
	evs := tl["events"].([]any)
	if tl["runId"] != runID || tl["status"] != "succeeded" || tl["startedAt"] == "" || tl["endedAt"] == "" || len(evs) != len(frames) {
		t.Fatalf("timeline %v", tl)
	}
	for i, raw := range evs {
		ev := raw.(map[string]any)
		if ev["event"] != frames[i].Event || fmt.Sprint(ev["seq"]) != frames[i].ID || ev["at"] == "" || fmt.Sprint(ev["payload"]) != fmt.Sprint(frames[i].Data) {
			t.Fatalf("timeline event %d = %v, streamed %v", i, ev, frames[i])
		}
	}
	e.apiError(req{method: "GET", path: "/v1/agent/runs/" + runID + "/timeline", token: eve}, 404, "run_timeline_not_found")
	e.apiError(req{method: "GET", path: "/v1/agent/runs/" + runID + "/timeline", token: bob}, 404, "run_timeline_not_found")
	e.apiError(req{method: "GET", path: "/v1/agent/runs/nope/timeline", token: alice}, 404, "run_timeline_not_found")
	e.apiError(req{method: "GET", path: "/v1/agent/runs/" + runID, token: eve}, 404, "run_not_found")

	// A second message continues the conversation with its history.
	frames = e.chat(alice, map[string]any{"conversationId": conv, "input": "and again"})
	lastSeq := fmt.Sprint(evs[len(evs)-1].(map[string]any)["seq"])
	if frames[0].Event != "agent.start" || seqOf(t, frames[0]) <= seqOf(t, native{ID: lastSeq}) {
		t.Fatalf("second run starts with %s id %s", frames[0].Event, frames[0].ID)
	}
}

func TestProviderFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		reply   llmtest.Reply
		cfg     openai.Config
		code    string
		partial bool
	}{
		{"unauthorized", llmtest.Reply{Fail: llmtest.FailStatus, Status: 401}, openai.Config{}, llm.CodeUnauthorized, false},
		{"rate limited after retries", llmtest.Reply{Fail: llmtest.FailStatus, Status: 429}, openai.Config{MaxRetries: 1}, llm.CodeRateLimited, false},
		{"server error", llmtest.Reply{Fail: llmtest.FailStatus, Status: 502}, openai.Config{}, llm.CodeUnavailable, false},
		{"timeout", llmtest.Reply{Fail: llmtest.FailHang}, openai.Config{Timeout: 100 * time.Millisecond}, llm.CodeTimeout, false},
		{"malformed stream", llmtest.Reply{Text: llmtest.Words("partial answer here"), Fail: llmtest.FailMalformed, FailAfter: 2}, openai.Config{}, llm.CodeBadStream, true},
		{"cut mid-stream", llmtest.Reply{Text: llmtest.Words("partial answer here"), Fail: llmtest.FailCut, FailAfter: 2}, openai.Config{}, llm.CodeStreamCut, true},
		{"no end marker", llmtest.Reply{Text: llmtest.Words("partial answer here"), Fail: llmtest.FailNoEnd, FailAfter: 2}, openai.Config{}, llm.CodeStreamCut, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			model, _ := openaiModel(t, llmtest.Options{Replies: []llmtest.Reply{tt.reply}}, tt.cfg)
			e := setup(t, options{model: model})
			frames := e.chat(alice, map[string]any{"input": "hi"})
			n := len(frames)
			if n < 3 || frames[n-2].Event != "error" || frames[n-1].Event != "agent.end" {
				t.Fatalf("stream ends with %v", names(frames))
			}
			errEv, end := frames[n-2].Data, frames[n-1].Data
			if errEv["code"] != tt.code || errEv["message"] == "" || strings.Contains(fmt.Sprint(errEv), "sk-test-secret-key") {
				t.Fatalf("error event %v, want code %s", errEv, tt.code)
			}
			endErr, _ := end["error"].(map[string]any)
			if end["status"] != "failed" || endErr["code"] != tt.code || endErr["message"] == "" {
				t.Fatalf("agent.end %v", end)
			}
			runID := frames[1].Data["runId"].(string)
			r := e.call(req{method: "GET", path: "/v1/agent/runs/" + runID, token: alice}, 200)
			if r["status"] != "failed" || r["error"].(map[string]any)["code"] != tt.code {
				t.Fatalf("run %v", r)
			}
			msgs := e.call(req{method: "GET", path: "/v1/conversations/" + frames[0].Data["conversationId"].(string) + "/messages", token: alice}, 200)["messages"].([]any)
			if msgs[0].(map[string]any)["role"] != "user" {
				t.Fatalf("user message lost: %v", msgs)
			}
			if tt.partial {
				if len(msgs) != 2 || !strings.Contains(fmt.Sprint(msgs[1].(map[string]any)["metadata"]), "partial:true") {
					t.Fatalf("partial answer not kept and marked: %v", msgs)
				}
				if msg, ok := find(frames, "agent.message"); !ok || msg.Data["partial"] != true {
					t.Fatalf("no partial agent.message: %v", names(frames))
				}
			} else if len(msgs) != 1 {
				t.Fatalf("messages %v", msgs)
			}
		})
	}
}

func TestUnreachableProvider(t *testing.T) {
	t.Parallel()
	m, err := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1/v1", APIKey: "k", Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, options{model: m})
	frames := e.chat(alice, map[string]any{"input": "hi"})
	if end := last(frames); end.Event != "agent.end" || end.Data["status"] != "failed" {
		t.Fatalf("stream %v", names(frames))
	}
	if ev := frames[len(frames)-2]; ev.Event != "error" || ev.Data["code"] != llm.CodeUnavailable {
		t.Fatalf("error %v", ev)
	}
}

// Reconnecting with every possible Last-Event-ID gives exactly the missing events.
func TestResumeFromEveryPosition(t *testing.T) {
	t.Parallel()
	model, _ := openaiModel(t, llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply("one two three four five six")}}, openai.Config{})
	e := setup(t, options{model: model})
	frames := e.chat(alice, map[string]any{"input": "count"})
	runID := frames[1].Data["runId"].(string)
	conv := frames[0].Data["conversationId"].(string)
	for k := 0; k <= len(frames); k++ {
		lastID := "0"
		if k > 0 {
			lastID = frames[k-1].ID
		}
		for _, path := range []string{"/v1/agent/runs/" + runID + "/events", "/v1/conversations/" + conv + "/events"} {
			rd, resp := e.stream(req{method: "GET", path: path, token: alice, header: map[string]string{"Last-Event-ID": lastID}})
			var got []native
			if strings.Contains(path, "/runs/") {
				got = readNative(t, rd, "")
			} else if k < len(frames) {
				got = readNative(t, rd, "agent.end") // a conversation stream stays open
			}
			resp.Body.Close()
			want := frames[k:]
			if strings.Join(idsOf(got), ",") != strings.Join(idsOf(want), ",") {
				t.Fatalf("%s after %s: got ids %v, want %v", path, lastID, idsOf(got), idsOf(want))
			}
		}
	}
	e.apiError(req{method: "GET", path: "/v1/agent/runs/" + runID + "/events", token: alice, header: map[string]string{"Last-Event-ID": "x"}}, 400, "invalid_last_event_id")
}

func idsOf(fs []native) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return out
}

// slowModel streams n tokens from a fake upstream, pace per token.
func slowModel(t *testing.T, n int, pace time.Duration) (llm.Model, *llmtest.Server) {
	return openaiModel(t, llmtest.Options{Replies: []llmtest.Reply{{Text: llmtest.Tokens(n)}}, Delay: pace}, openai.Config{})
}

// A client that drops mid-run and reconnects with its last id misses
// nothing and sees nothing twice; the run never notices.
func TestDisconnectAndResumeLive(t *testing.T) {
	t.Parallel()
	model, _ := slowModel(t, 60, 5*time.Millisecond)
	e := setup(t, options{model: model})
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "tell me a story"}})
	first := readNative(t, rd, "agent.delta")
	first = append(first, readNative(t, rd, "agent.delta")...)
	resp.Body.Close() // the client goes away mid-run
	runID := first[1].Data["runId"].(string)
	rd2, resp2 := e.stream(req{method: "GET", path: "/v1/agent/runs/" + runID + "/events", token: alice, header: map[string]string{"Last-Event-ID": last(first).ID}})
	rest := readNative(t, rd2, "")
	resp2.Body.Close()
	all := append(first, rest...)
	// The whole run, replayed, is exactly what the two connections saw together.
	rd3, resp3 := e.stream(req{method: "GET", path: "/v1/agent/runs/" + runID + "/events", token: alice})
	replay := readNative(t, rd3, "")
	resp3.Body.Close()
	if strings.Join(idsOf(all), ",") != strings.Join(idsOf(replay), ",") {
		t.Fatalf("two connections saw %v\nthe run is %v", idsOf(all), idsOf(replay))
	}
	if end := last(all); end.Event != "agent.end" || end.Data["status"] != "succeeded" {
		t.Fatalf("run did not finish: %v", end)
	}
	if deltas := countEvent(all, "agent.delta"); deltas != 60 {
		t.Fatalf("%d deltas, want 60", deltas)
	}
}

func countEvent(fs []native, name string) int {
	n := 0
	for _, f := range fs {
		if f.Event == name {
			n++
		}
	}
	return n
}

// Closing the tab does not cancel the agent: the run completes and is stored.
func TestRunOutlivesItsConnection(t *testing.T) {
	t.Parallel()
	model, _ := slowModel(t, 30, 2*time.Millisecond)
	e := setup(t, options{model: model})
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "go"}})
	start := readNative(t, rd, "agent.start")
	resp.Body.Close()
	conv := start[0].Data["conversationId"].(string)
	rd2, resp2 := e.stream(req{method: "GET", path: "/v1/conversations/" + conv + "/events", token: alice, header: map[string]string{"Last-Event-ID": start[1].ID}})
	rest := readNative(t, rd2, "agent.end")
	resp2.Body.Close()
	if end := last(rest); end.Data["status"] != "succeeded" {
		t.Fatalf("run ended %v", end.Data)
	}
	msgs := e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/messages", token: alice}, 200)["messages"].([]any)
	if len(msgs) != 2 || msgs[1].(map[string]any)["role"] != "assistant" {
		t.Fatalf("messages %v", msgs)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	model, up := slowModel(t, 500, 10*time.Millisecond)
	e := setup(t, options{model: model})
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "long"}})
	defer resp.Body.Close()
	got := readNative(t, rd, "agent.delta")
	runID := got[1].Data["runId"].(string)
	e.apiError(req{method: "POST", path: "/v1/agent/runs/" + runID + "/cancel", token: eve}, 404, "run_not_found")
	r := e.call(req{method: "POST", path: "/v1/agent/runs/" + runID + "/cancel", token: alice}, 200)
	if r["status"] != "cancelled" {
		t.Fatalf("cancel answered %v", r)
	}
	rest := readNative(t, rd, "")
	all := append(got, rest...)
	if end := last(all); end.Event != "agent.end" || end.Data["status"] != "cancelled" {
		t.Fatalf("stream ended %v", names(all[len(all)-3:]))
	}
	if countEvent(all, "agent.delta") >= 500 {
		t.Fatal("cancel did not stop the run")
	}
	select {
	case <-up.Requests()[0].Gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request was not cancelled")
	}
	again := e.call(req{method: "POST", path: "/v1/agent/runs/" + runID + "/cancel", token: alice}, 200)
	if again["status"] != "cancelled" || again["endedAt"] != r["endedAt"] {
		t.Fatalf("second cancel changed the run: %v", again)
	}
	msgs := e.call(req{method: "GET", path: "/v1/conversations/" + got[0].Data["conversationId"].(string) + "/messages", token: alice}, 200)["messages"].([]any)
	if len(msgs) != 2 || !strings.Contains(fmt.Sprint(msgs[1]), "partial:true") {
		t.Fatalf("partial answer not kept: %v", msgs)
	}
}

func TestOneActiveRunPerConversation(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			o := options{}
			if backend == "postgres" {
				o.pgURL = postgresSchema(t)
			}
			o.model, _ = slowModel(t, 200, 10*time.Millisecond)
			oneActiveRun(t, setup(t, o))
		})
	}
}

// oneActiveRun: a second start on a busy conversation is refused naming
// the active run, which the conversation names too until it ends.
func oneActiveRun(t *testing.T, e *env) {
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "first"}})
	defer resp.Body.Close()
	start := readNative(t, rd, "agent.start")
	conv, runID := start[0].Data["conversationId"].(string), start[1].Data["runId"].(string)
	errObj := e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"conversationId": conv, "input": "second"}}, 409, "conversation_busy")
	if errObj["activeRunId"] != runID {
		t.Fatalf("409 names %v, want %s", errObj["activeRunId"], runID)
	}
	// The conversation names its run, so a reload elsewhere can attach.
	if c := e.call(req{method: "GET", path: "/v1/conversations/" + conv, token: alice}, 200); c["activeRunId"] != runID {
		t.Fatalf("conversation names active run %v, want %s", c["activeRunId"], runID)
	}
	e.call(req{method: "POST", path: "/v1/agent/runs/" + runID + "/cancel", token: alice}, 200)
	if c := e.call(req{method: "GET", path: "/v1/conversations/" + conv, token: alice}, 200); c["activeRunId"] != nil {
		t.Fatalf("a cancelled run is still active: %v", c["activeRunId"])
	}
	frames := e.chat(alice, map[string]any{"conversationId": conv, "input": "second"})
	if last(frames).Event != "agent.end" {
		t.Fatalf("run after cancel: %v", names(frames))
	}
}

// Pings flow while the model has not answered yet.
func TestPingsWhileWaiting(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	model, _ := openaiModel(t, llmtest.Options{Replies: []llmtest.Reply{{Fail: llmtest.FailHang}}, OnRequest: func(llmtest.Request) { arrived <- struct{}{} }}, openai.Config{Timeout: time.Minute})
	e := setup(t, options{model: model, ping: 10 * time.Millisecond})
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hello?"}})
	defer resp.Body.Close()
	<-arrived
	pings := 0
	for pings < 3 {
		f, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.Event == "agent.delta" {
			t.Fatal("delta from a hanging model")
		}
		if f.Event == "ping" {
			var p struct {
				Event string            `json:"event"`
				Data  map[string]string `json:"data"`
			}
			f.JSON(t, &p)
			if p.Event != "ping" || p.Data["at"] == "" || f.ID != "" {
				t.Fatalf("ping frame %+v", f)
			}
			pings++
		}
	}
	if h := resp.Header; h.Get("Cache-Control") != "no-cache" || h.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("SSE headers %v", h)
	}
}

// A reader that never reads does not hold up the run or other readers.
func TestSlowReaderDoesNotStall(t *testing.T) {
	t.Parallel()
	model, _ := slowModel(t, 3000, 0)
	e := setup(t, options{model: model})
	c := e.call(req{method: "POST", path: "/v1/conversations", token: alice}, 200)
	conv := c["id"].(string)
	stalled := e.send(req{method: "GET", path: "/v1/conversations/" + conv + "/events", token: alice})
	defer stalled.Body.Close() // never read
	var wg sync.WaitGroup
	var watched []native
	rd, resp := e.stream(req{method: "GET", path: "/v1/conversations/" + conv + "/events", token: alice})
	wg.Go(func() { watched = readNative(t, rd, "agent.end") })
	frames := e.chat(alice, map[string]any{"conversationId": conv, "input": "a lot"})
	wg.Wait()
	resp.Body.Close()
	if last(frames).Data["status"] != "succeeded" || countEvent(frames, "agent.delta") != 3000 {
		t.Fatalf("chat stream: %d deltas, end %v", countEvent(frames, "agent.delta"), last(frames).Data)
	}
	if len(watched) != len(frames) {
		t.Fatalf("watcher saw %d events, chat %d", len(watched), len(frames))
	}
}

func TestSSEHeadersAndRetry(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	resp := e.send(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hi"}})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Run-ID") == "" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
	}
	buf := make([]byte, 16)
	n, _ := resp.Body.Read(buf)
	if !strings.HasPrefix(string(buf[:n]), "retry: ") {
		t.Fatalf("stream starts with %q", buf[:n])
	}
}

// On shutdown, open streams say why they end, so clients resume elsewhere.
func TestShutdownEndsStreamsCleanly(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	c := e.call(req{method: "POST", path: "/v1/conversations", token: alice}, 200)
	rd, resp := e.stream(req{method: "GET", path: "/v1/conversations/" + c["id"].(string) + "/events", token: alice})
	defer resp.Body.Close()
	e.api.Close()
	frames := readNative(t, rd, "")
	if len(frames) != 1 || frames[0].Event != "error" || frames[0].Data["code"] != "server_shutdown" {
		t.Fatalf("stream ended with %v", frames)
	}
}
