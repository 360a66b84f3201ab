package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/ssetest"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/llm/openai"
)

// multitaskModel answers "Answer to <input>.", except an input with
// "slow" in it: that answer streams a few words and then holds until the
// test ends or the run is cancelled, so the run is active for as long as
// the test needs, whatever the machine's speed.
func multitaskModel(t *testing.T) llm.Model {
	t.Helper()
	hold := make(chan struct{})
	slow := llmtest.OpenAIHandler(llmtest.Options{Hold: hold, HoldAfter: 3,
		Replies: []llmtest.Reply{{Text: []string{"Half ", "an ", "answer ", "and ", "the ", "rest"}}}})
	fast := llmtest.OpenAIHandler(llmtest.Options{Reply: func(r llmtest.Request) llmtest.Reply {
		return llmtest.TextReply("Answer to " + lastUserText(r.Body) + ".")
	}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		if strings.Contains(lastUserText(body), "slow") {
			slow.ServeHTTP(w, r)
			return
		}
		fast.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hold) }) // first: a held stream ends, then the server closes
	m, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test-secret-key", Model: "gpt-test", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func lastUserText(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m, _ := msgs[i].(map[string]any); m["role"] == "user" {
			return fmt.Sprint(m["content"])
		}
	}
	return ""
}

// Double-texting through the native API, on both stores: interrupt keeps
// the interrupted answer in the branch, marked; rollback takes the
// interrupted turn out of the branch and keeps it in the tree; an unknown
// strategy is refused; without one the input is refused busy.
func TestMultitaskStrategies(t *testing.T) {
	t.Parallel()
	for _, backend := range []struct {
		name     string
		postgres bool
	}{{"sqlite", false}, {"postgres", true}} {
		t.Run(backend.name, func(t *testing.T) {
			t.Parallel()
			t.Run("interrupt", func(t *testing.T) {
				t.Parallel()
				e := setup(t, options{model: multitaskModel(t), postgres: backend.postgres})
				rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "a slow question"}})
				defer resp.Body.Close()
				first := readNative(t, rd, "agent.delta")
				conv, runID := first[0].Data["conversationId"].(string), first[1].Data["runId"].(string)

				busy := e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"conversationId": conv, "input": "too soon"}}, 409, "conversation_busy")
				if busy["activeRunId"] != runID {
					t.Fatalf("busy names %v", busy["activeRunId"])
				}
				e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"conversationId": conv, "input": "x", "multitaskStrategy": "later"}}, 422, "invalid_field")

				second := e.chat(alice, map[string]any{"conversationId": conv, "input": "second", "multitaskStrategy": "interrupt"})
				if end := last(second); end.Data["status"] != "succeeded" {
					t.Fatalf("interrupting run: %v", end.Data)
				}
				rest := readNative(t, rd, "")
				end := last(rest)
				errInfo, _ := end.Data["error"].(map[string]any)
				if end.Event != "agent.end" || end.Data["status"] != "cancelled" || errInfo["code"] != "run_interrupted" {
					t.Fatalf("interrupted run ended %v", end.Data)
				}
				msgs := e.treeMessages(alice, conv, false)
				if len(msgs) != 4 || !strings.HasPrefix(fmt.Sprint(msgs[1]["content"]), "Half") || msgs[2]["content"] != "second" || msgs[3]["content"] != "Answer to second." {
					t.Fatalf("branch after interrupt: %s", contentsOf(msgs))
				}
				if s := fmt.Sprint(msgs[1]); !strings.Contains(s, "interrupted:true") || !strings.Contains(s, "partial:true") {
					t.Fatalf("interrupted answer not marked: %v", msgs[1])
				}
				if msgs[2]["parentId"] != msgs[1]["id"] {
					t.Fatalf("the new input follows %v, not the interrupted answer %v", msgs[2]["parentId"], msgs[1]["id"])
				}
			})
			t.Run("enqueue", func(t *testing.T) {
				t.Parallel()
				e := setup(t, options{model: multitaskModel(t), postgres: backend.postgres})
				rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "a slow question"}})
				defer resp.Body.Close()
				first := readNative(t, rd, "agent.delta")
				conv, runID := first[0].Data["conversationId"].(string), first[1].Data["runId"].(string)

				// Both are accepted at once, queued, with the ids their runs will have.
				rd2, resp2 := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"conversationId": conv, "input": "second", "multitaskStrategy": "enqueue"}})
				defer resp2.Body.Close()
				rd3, resp3 := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"conversationId": conv, "input": "third", "multitaskStrategy": "enqueue"}})
				defer resp3.Body.Close()
				for _, r := range []*http.Response{resp2, resp3} {
					if r.Header.Get("X-Run-Status") != "queued" || r.Header.Get("X-Run-ID") == "" || r.Header.Get("X-Run-ID") == runID {
						t.Fatalf("queued input answered %v", r.Header)
					}
				}
				// The active run ends (here: cancelled); the queue starts, in order.
				e.call(req{method: "POST", path: "/v1/agent/runs/" + runID + "/cancel", token: alice}, 200)
				for i, rd := range []*ssetest.Reader{rd2, rd3} {
					frames := readNative(t, rd, "")
					start, end := frames[0], last(frames)
					if start.Event != "agent.start" || start.Data["runId"] != []string{resp2.Header.Get("X-Run-ID"), resp3.Header.Get("X-Run-ID")}[i] || end.Data["status"] != "succeeded" {
						t.Fatalf("queued input %d: %v … %v", i, start.Data, end.Data)
					}
				}
				msgs := e.treeMessages(alice, conv, false)
				if got := contentsOf(msgs[2:]); len(msgs) != 6 || got != "second|Answer to second.|third|Answer to third." {
					t.Fatalf("branch after the queue: %s", contentsOf(msgs))
				}
			})
			t.Run("rollback", func(t *testing.T) {
				t.Parallel()
				e := setup(t, options{model: multitaskModel(t), postgres: backend.postgres})
				rd0, resp0 := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "q0"}})
				readNative(t, rd0, "")
				conv := resp0.Header.Get("X-Conversation-ID")
				resp0.Body.Close()

				rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"conversationId": conv, "input": "a slow question"}})
				defer resp.Body.Close()
				readNative(t, rd, "agent.delta")
				second := e.chat(alice, map[string]any{"conversationId": conv, "input": "q2", "multitaskStrategy": "rollback"})
				if end := last(second); end.Data["status"] != "succeeded" {
					t.Fatalf("rolling-back run: %v", end.Data)
				}
				if end := last(readNative(t, rd, "")); end.Data["status"] != "cancelled" {
					t.Fatalf("rolled-back run ended %v", end.Data)
				}
				active := e.treeMessages(alice, conv, false)
				if contentsOf(active) != "q0|Answer to q0.|q2|Answer to q2." {
					t.Fatalf("branch after rollback: %s", contentsOf(active))
				}
				all := e.treeMessages(alice, conv, true)
				if len(all) != 6 || !strings.Contains(contentsOf(all), "a slow question|Half") {
					t.Fatalf("the tree lost the rolled-back turn: %s", contentsOf(all))
				}
				var slowQ map[string]any
				for _, m := range all {
					if m["content"] == "a slow question" {
						slowQ = m
					}
				}
				if slowQ["parentId"] != active[1]["id"] || active[2]["parentId"] != active[1]["id"] {
					t.Fatalf("q2 follows %v and the rolled-back question %v; want both %v", active[2]["parentId"], slowQ["parentId"], active[1]["id"])
				}
				if got := stringsOf(active[2]["siblingIds"]); len(got) != 2 || got[0] != slowQ["id"] {
					t.Fatalf("q2's siblings %v", got)
				}
			})
		})
	}
}

// An agent's multitaskStrategy is the default of its conversations: a
// second input that names none interrupts the run; one that names reject
// is refused busy all the same.
func TestMultitaskAgentDefault(t *testing.T) {
	t.Parallel()
	e := setup(t, options{model: multitaskModel(t), agents: true})
	ag := e.call(req{method: "POST", path: "/v1/agents", token: root, body: map[string]any{"name": "Eager", "multitaskStrategy": "interrupt"}}, 201)
	if ag["multitaskStrategy"] != "interrupt" {
		t.Fatalf("agent %v", ag)
	}
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "a slow question", "agentId": ag["id"]}})
	defer resp.Body.Close()
	first := readNative(t, rd, "agent.delta")
	conv := first[0].Data["conversationId"].(string)
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"conversationId": conv, "input": "no", "multitaskStrategy": "reject"}}, 409, "conversation_busy")
	if end := last(e.chat(alice, map[string]any{"conversationId": conv, "input": "second"})); end.Data["status"] != "succeeded" {
		t.Fatalf("second input: %v", end.Data)
	}
	if end := last(readNative(t, rd, "")); end.Data["status"] != "cancelled" {
		t.Fatalf("the agent's default did not interrupt: %v", end.Data)
	}
}
