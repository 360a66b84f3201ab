package clustertest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/clustertest"
)

// gatedUpstream serves a fake model from a process of its own, and returns
// the environment pointing replicas at it. Its answer to an input the hold
// names (the last user message of the request is hold.HoldInput, or starts
// with hold.HoldPrefix) stops after a few tokens until release is called
// (or the request is cancelled, or the test ends); every other answer
// streams through. A test that needs a run still going when it acts holds
// the run there, rather than counting on a pace to be slow enough on a
// loaded machine.
func gatedUpstream(t *testing.T, hold clustertest.ModelOptions) (env []string, release func()) {
	t.Helper()
	hold.Tokens, hold.Pace, hold.Hold, hold.HoldAfter = 20, 5*time.Millisecond, true, 4
	m := clustertest.StartModel(t, hold)
	return m.Env(), m.Release
}

// Double-texting across replicas (issue 22): a run streams on replica a and
// the second input reaches replica b. With interrupt, b cancels a's run
// through the bus (it ends cancelled with run_interrupted, its partial
// answer kept and marked) and answers the new input after it; with rollback,
// the same, and the interrupted turn leaves the active branch but stays in
// the tree; without a strategy b refuses the input busy, naming a's run.
func TestMultitaskAcrossReplicas(t *testing.T) {
	t.Parallel()
	// The first run of each round is held after a few tokens and never
	// released: it is still answering when the second input arrives, on
	// any machine, and ends only by the interruption. (A pace alone let it
	// end first on a loaded one.)
	env, _ := gatedUpstream(t, clustertest.ModelOptions{HoldPrefix: "tell me about the sea"})
	c := clustertest.New(t, clustertest.Options{Env: env})
	a, b := c.Start("a"), c.Start("b")

	type message struct {
		ID       string          `json:"id"`
		Content  string          `json:"content"`
		ParentID *string         `json:"parentId"`
		Metadata json.RawMessage `json:"metadata"`
	}
	messages := func(conv string, all bool) []message {
		t.Helper()
		path := "/v1/conversations/" + conv + "/messages?limit=100"
		if all {
			path += "&branch=all"
		}
		resp, body := c.Do(b, http.MethodGet, path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("messages: %d %s", resp.StatusCode, body)
		}
		var out struct{ Messages []message }
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	contents := func(msgs []message) string {
		var out []string
		for _, m := range msgs {
			out = append(out, m.Content)
		}
		return strings.Join(out, "|")
	}
	end := func(s *clustertest.Stream, what string) map[string]any {
		t.Helper()
		frames, err := s.ReadUntil(60*time.Second, clustertest.IsEnd)
		if err != nil || len(frames) == 0 || !clustertest.IsEnd(frames[len(frames)-1]) {
			t.Fatalf("%s: no agent.end: %v", what, err)
		}
		var data map[string]any
		_ = json.Unmarshal(frames[len(frames)-1].Data, &data)
		return data
	}

	for _, strategy := range []string{"interrupt", "rollback"} {
		first := c.Chat(a, map[string]any{"input": "tell me about the sea, " + strategy})
		if _, err := first.ReadUntil(30*time.Second, func(f clustertest.Frame) bool { return f.Event == "agent.delta" }); err != nil {
			t.Fatalf("%s: the first run does not stream: %v", strategy, err)
		}
		conv, runID := first.Header.Get("X-Conversation-ID"), first.Header.Get("X-Run-ID")

		if strategy == "interrupt" {
			resp, body := c.Do(b, http.MethodPost, "/v1/agent/chat", map[string]any{"conversationId": conv, "input": "too soon"})
			if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), runID) {
				t.Fatalf("no strategy: %d %s", resp.StatusCode, body)
			}
		}

		second := c.Chat(b, map[string]any{"conversationId": conv, "input": "second", "multitaskStrategy": strategy})
		if got := end(second, strategy+": the new input's run"); got["status"] != "succeeded" {
			t.Fatalf("%s: the new input's run ended %v", strategy, got)
		}
		got := end(first, strategy+": the interrupted run")
		errInfo, _ := got["error"].(map[string]any)
		if got["status"] != "cancelled" || errInfo["code"] != "run_interrupted" {
			t.Fatalf("%s: the interrupted run ended %v", strategy, got)
		}
		first.Close()
		second.Close()

		active, all := messages(conv, false), messages(conv, true)
		if len(all) != 4 || !strings.Contains(string(all[1].Metadata), `"interrupted":true`) {
			t.Fatalf("%s: the tree %s, %s", strategy, contents(all), all[1].Metadata)
		}
		switch strategy {
		case "interrupt":
			if len(active) != 4 || active[2].Content != "second" || active[2].ParentID == nil || *active[2].ParentID != active[1].ID {
				t.Fatalf("interrupt: the branch %s", contents(active))
			}
		case "rollback":
			if len(active) != 2 || active[0].Content != "second" || active[0].ParentID != nil {
				t.Fatalf("rollback: the branch %s", contents(active))
			}
		}
	}
}

// Queued inputs across replicas: while a run streams on replica a, one
// input is queued on b and the next on a; both are accepted at once, and
// when the run ends they start in order, whichever replica starts them, each
// stream following its own run.
func TestEnqueueAcrossReplicas(t *testing.T) {
	t.Parallel()
	// The first run is held after a few tokens until both inputs are
	// queued, so that they queue behind it on any machine.
	env, release := gatedUpstream(t, clustertest.ModelOptions{HoldInput: "tell me about the sea"})
	c := clustertest.New(t, clustertest.Options{Env: env})
	a, b := c.Start("a"), c.Start("b")

	first := c.Chat(a, map[string]any{"input": "tell me about the sea"})
	defer first.Close()
	if _, err := first.ReadUntil(30*time.Second, func(f clustertest.Frame) bool { return f.Event == "agent.delta" }); err != nil {
		t.Fatalf("the first run does not stream: %v", err)
	}
	conv := first.Header.Get("X-Conversation-ID")
	second := c.Chat(b, map[string]any{"conversationId": conv, "input": "second", "multitaskStrategy": "enqueue"})
	defer second.Close()
	third := c.Chat(a, map[string]any{"conversationId": conv, "input": "third", "multitaskStrategy": "enqueue"})
	defer third.Close()
	for _, s := range []*clustertest.Stream{second, third} {
		if s.Header.Get("X-Run-Status") != "queued" {
			t.Fatalf("not queued: %v", s.Header)
		}
	}
	release()
	for i, s := range []*clustertest.Stream{first, second, third} {
		frames, err := s.ReadUntil(60*time.Second, clustertest.IsEnd)
		if err != nil || len(frames) == 0 {
			t.Fatalf("stream %d: %v", i, err)
		}
		end := frames[len(frames)-1]
		if end.Field("status") != "succeeded" {
			t.Fatalf("stream %d ended %s", i, end)
		}
		if i > 0 && frames[0].Field("runId") != s.Header.Get("X-Run-ID") {
			t.Fatalf("stream %d follows %s, not its run %s", i, frames[0], s.Header.Get("X-Run-ID"))
		}
	}
	resp, body := c.Do(b, http.MethodGet, "/v1/conversations/"+conv+"/messages?limit=100", nil)
	var out struct{ Messages []struct{ Content string } }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || len(out.Messages) != 6 ||
		out.Messages[2].Content != "second" || out.Messages[4].Content != "third" {
		t.Fatalf("the branch: %d %s", resp.StatusCode, body)
	}
}
