package httpapi_test

import (
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/agui/aguitest"
)

// A queued input is a run before it starts, on both stores: its owner reads
// it (status queued) and sees it in the conversation's queue, in order;
// nobody else does; a retry with its Idempotency-Key attaches to it;
// cancelling it takes it out of the queue, so it never starts, and ends its
// open streams cancelled; the next input still starts when the active run
// ends.
func TestQueuedRun(t *testing.T) {
	t.Parallel()
	for _, backend := range []struct {
		name     string
		postgres bool
	}{{"sqlite", false}, {"postgres", true}} {
		t.Run(backend.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, options{model: multitaskModel(t), postgres: backend.postgres})
			rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "a slow question"}})
			defer resp.Body.Close()
			first := readNative(t, rd, "agent.delta")
			conv, runID := first[0].Data["conversationId"].(string), first[1].Data["runId"].(string)

			secondBody := map[string]any{"conversationId": conv, "input": "second", "multitaskStrategy": "enqueue"}
			key := map[string]string{"Idempotency-Key": "queued-second"}
			rd2, resp2 := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: secondBody, header: key})
			defer resp2.Body.Close()
			rd3, resp3 := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"conversationId": conv, "input": "third", "multitaskStrategy": "enqueue"}})
			defer resp3.Body.Close()
			id2, id3 := resp2.Header.Get("X-Run-ID"), resp3.Header.Get("X-Run-ID")

			got := e.call(req{method: "GET", path: "/v1/agent/runs/" + id2, token: alice}, 200)
			if got["id"] != id2 || got["status"] != "queued" || got["input"] != "second" || got["conversationId"] != conv || got["createdAt"] == "" {
				t.Fatalf("queued run reads %v", got)
			}
			for _, other := range []string{bob, eve} {
				e.call(req{method: "GET", path: "/v1/agent/runs/" + id2, token: other}, 404)
				e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/queue", token: other}, 404)
				e.call(req{method: "POST", path: "/v1/agent/runs/" + id2 + "/cancel", token: other}, 404)
			}
			queue := e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/queue", token: alice}, 200)
			if ids, inputs := fieldsOf(queue["runs"], "id"), fieldsOf(queue["runs"], "input"); ids != id2+"|"+id3 || inputs != "second|third" || queue["hasMore"] != false {
				t.Fatalf("queue %v", queue)
			}

			// A retry attaches to the queued run: no second input is queued.
			rdRetry, respRetry := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: secondBody, header: key})
			defer respRetry.Body.Close()
			if respRetry.Header.Get("X-Run-ID") != id2 {
				t.Fatalf("the retry got run %q, want the queued %q", respRetry.Header.Get("X-Run-ID"), id2)
			}

			cancelled := e.call(req{method: "POST", path: "/v1/agent/runs/" + id2 + "/cancel", token: alice}, 200)
			if cancelled["id"] != id2 || cancelled["status"] != "cancelled" || cancelled["endedAt"] == "" {
				t.Fatalf("cancel answered %v", cancelled)
			}
			// Both streams of the cancelled input end as a cancelled run.
			for i, frames := range [][]native{readNative(t, rd2, ""), readNative(t, rdRetry, "")} {
				end := last(frames)
				if len(frames) != 1 || end.Event != "agent.end" || end.Data["status"] != "cancelled" || end.Data["runId"] != id2 {
					t.Fatalf("stream %d of the cancelled queued run: %v", i, frames)
				}
			}
			e.call(req{method: "POST", path: "/v1/agent/runs/" + id2 + "/cancel", token: alice}, 404)
			queue = e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/queue", token: alice}, 200)
			if ids := fieldsOf(queue["runs"], "id"); ids != id3 {
				t.Fatalf("queue after the cancel: %v", queue)
			}

			e.call(req{method: "POST", path: "/v1/agent/runs/" + runID + "/cancel", token: alice}, 200)
			frames := readNative(t, rd3, "")
			if start, end := frames[0], last(frames); start.Event != "agent.start" || start.Data["runId"] != id3 || end.Data["status"] != "succeeded" {
				t.Fatalf("third: %v … %v", start.Data, end.Data)
			}
			if got := e.call(req{method: "GET", path: "/v1/agent/runs/" + id3, token: alice}, 200); got["status"] != "succeeded" {
				t.Fatalf("third run reads %v", got)
			}
			msgs := e.treeMessages(alice, conv, true)
			if c := contentsOf(msgs); strings.Contains(c, "second") || !strings.HasSuffix(c, "third|Answer to third.") || len(msgs) != 4 {
				t.Fatalf("the cancelled input ran: %s", c)
			}
			queue = e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/queue", token: alice}, 200)
			if runs, _ := queue["runs"].([]any); len(runs) != 0 {
				t.Fatalf("queue after all ran: %v", queue)
			}
		})
	}
}

// Enqueue through AG-UI: forwardedProps.multitaskStrategy queues the input
// behind the thread's active run; the 202 says queued (and says it again
// to a retry with the same Idempotency-Key), and the run starts, under the
// task id it was given, when the active run ends.
func TestQueuedRunAGUI(t *testing.T) {
	t.Parallel()
	e := setup(t, options{model: multitaskModel(t)})
	rd, resp := e.aguiStream(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: input("thread-q", "run-1", userMsg("u1", "a slow question"))})
	defer resp.Body.Close()
	readAGUI(t, rd, true, func(ev aguitest.Event) bool { return ev.Type() == "TEXT_MESSAGE_CONTENT" })

	in := input("thread-q", "run-2", userMsg("u2", "second"))
	in["forwardedProps"] = map[string]any{"multitaskStrategy": "enqueue"}
	key := map[string]string{"Idempotency-Key": "agui-second"}
	acc := e.call(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: in, header: key}, 202)
	task, _ := acc["taskId"].(string)
	if acc["queued"] != true || task == "" || acc["threadId"] != "thread-q" || acc["runId"] != "run-2" {
		t.Fatalf("enqueue answered %v", acc)
	}
	if again := e.call(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: in, header: key}, 202); again["taskId"] != task || again["queued"] != true {
		t.Fatalf("retry answered %v, want the queued task %s", again, task)
	}
	queued := e.call(req{method: "GET", path: "/v1/agent/runs/" + task, token: alice}, 200)
	conv, _ := queued["conversationId"].(string)
	if queued["status"] != "queued" || queued["input"] != "second" || conv == "" {
		t.Fatalf("queued task reads %v", queued)
	}
	if q := e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/queue", token: alice}, 200); fieldsOf(q["runs"], "id") != task {
		t.Fatalf("queue %v", q)
	}
	// Follow the queued run by its id, then end the active run.
	rdTask, respTask := e.stream(req{method: "GET", path: "/v1/agent/runs/" + task + "/events", token: alice})
	defer respTask.Body.Close()
	active, _ := e.call(req{method: "GET", path: "/v1/conversations/" + conv, token: alice}, 200)["activeRunId"].(string)
	if active == "" || active == task {
		t.Fatalf("active run %q", active)
	}
	e.call(req{method: "POST", path: "/v1/agent/runs/" + active + "/cancel", token: alice}, 200)
	readAGUI(t, rd, true, nil)
	frames := readNative(t, rdTask, "")
	if start, end := frames[0], last(frames); start.Event != "agent.start" || start.Data["runId"] != task || end.Data["status"] != "succeeded" {
		t.Fatalf("queued AG-UI run: %v … %v", start.Data, end.Data)
	}
	if c := contentsOf(e.treeMessages(alice, conv, false)); !strings.HasSuffix(c, "second|Answer to second.") {
		t.Fatalf("thread after the queue: %s", c)
	}
}

// Enqueue through the AI SDK transport: the multitaskStrategy body field
// queues the input behind the chat's active run; its stream opens at once,
// marked queued, and carries its run's whole answer once the active run
// ends; one cancelled while queued finishes its message empty.
func TestQueuedRunAISDK(t *testing.T) {
	t.Parallel()
	e := setup(t, options{model: multitaskModel(t)})
	rd, resp := e.stream(req{method: "POST", path: uiPath, token: alice, body: transportBody("chat-q", "submit-message", "", userMessage("u1", "a slow question"))})
	defer resp.Body.Close()
	for {
		f, err := rd.Next()
		if err != nil {
			t.Fatalf("the slow answer did not start: %v", err)
		}
		if strings.Contains(f.Data, `"text-delta"`) {
			break
		}
	}
	activeID := resp.Header.Get("X-Run-ID")

	body := transportBody("chat-q", "submit-message", "", userMessage("u1", "a slow question"), userMessage("u2", "second"))
	body["multitaskStrategy"] = "enqueue"
	rd2, resp2 := e.stream(req{method: "POST", path: uiPath, token: alice, body: body})
	defer resp2.Body.Close()
	id2 := resp2.Header.Get("X-Run-ID")
	if resp2.Header.Get("X-Run-Status") != "queued" || id2 == "" || id2 == activeID || resp2.Header.Get("X-Conversation-ID") != resp.Header.Get("X-Conversation-ID") {
		t.Fatalf("enqueue answered %v", resp2.Header)
	}
	if got := e.call(req{method: "GET", path: "/v1/agent/runs/" + id2, token: alice}, 200); got["status"] != "queued" || got["input"] != "second" {
		t.Fatalf("queued run reads %v", got)
	}
	// A queued input cancelled before it starts: its stream opens and
	// finishes the message, with nothing in it.
	body3 := transportBody("chat-q", "submit-message", "", userMessage("u1", "a slow question"), userMessage("u3", "third"))
	body3["multitaskStrategy"] = "enqueue"
	rd3, resp3 := e.stream(req{method: "POST", path: uiPath, token: alice, body: body3})
	defer resp3.Body.Close()
	e.call(req{method: "POST", path: "/v1/agent/runs/" + resp3.Header.Get("X-Run-ID") + "/cancel", token: alice}, 200)
	if got := readUI(t, rd3, resp3.Header).types(); strings.Join(got, "|") != "start|finish" {
		t.Fatalf("cancelled queued AI SDK stream: %v", got)
	}

	e.call(req{method: "POST", path: "/v1/agent/runs/" + activeID + "/cancel", token: alice}, 200)
	s := readUI(t, rd2, resp2.Header)
	if s.text() != "Answer to second." {
		t.Fatalf("queued AI SDK stream: %v %q", s.types(), s.text())
	}
	if got := e.call(req{method: "GET", path: "/v1/agent/runs/" + id2, token: alice}, 200); got["status"] != "succeeded" {
		t.Fatalf("queued run ended %v", got)
	}
}

// fieldsOf joins one field of each object of a JSON array with "|".
func fieldsOf(list any, field string) string {
	items, _ := list.([]any)
	var out []string
	for _, it := range items {
		m, _ := it.(map[string]any)
		s, _ := m[field].(string)
		out = append(out, s)
	}
	return strings.Join(out, "|")
}
