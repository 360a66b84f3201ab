package clustertest_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/clustertest"
)

// The embedded default, one process over its SQLite file, killed with -9 and
// started again (issue 11): ids a client saw are never reused, a reconnecting
// client reaches the run's end, and what the dead process left pending ends
// with its run.

// embedded is the environment of a replica on the embedded default.
var embedded = []string{"AGENTCHAT_STORE=", "AGENTCHAT_BUS=memory"}

// A client saw deltas the log may not have had when the process died: after
// the restart its Last-Event-ID leads to the run's failed end, whose id is
// above every id it saw, and the timeline gives none of those ids to
// another event.
func TestEmbeddedKillNeverReusesIDs(t *testing.T) {
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Env: upstream(t, 2000, 5*time.Millisecond)})
	solo := c.Start("solo", embedded...)
	chat := c.Chat(solo, map[string]any{"input": "tell me a long story"})
	runID := started(t, chat)
	seen, err := chat.ReadUntil(10*time.Second, func(f clustertest.Frame) bool { return f.Event == "agent.delta" && f.Seq > 60 })
	if err != nil {
		t.Fatal(err)
	}
	solo.Kill()
	last := seen[len(seen)-1].Seq

	solo = c.Start("solo", embedded...)
	for _, after := range []int64{last, last - 5} {
		s := c.Attach(solo, runID, after)
		frames, err := s.ReadUntil(10*time.Second, clustertest.IsEnd)
		s.Close()
		if err != nil {
			t.Fatalf("after %d: %v", after, err)
		}
		end := frames[len(frames)-1]
		if !clustertest.IsEnd(end) || end.Seq <= last {
			t.Fatalf("after %d: last frame %v; the client had seen %d", after, end, last)
		}
		if status, code := endStatus(t, end); status != "failed" || code != "executor_lost" {
			t.Fatalf("end %v", end)
		}
	}
	byID := map[int64]clustertest.Frame{}
	for _, f := range seen {
		byID[f.Seq] = f
	}
	for _, f := range c.Timeline(solo, runID) {
		if s, ok := byID[f.Seq]; ok && (s.Event != f.Event || string(s.Data) != string(f.Data)) {
			t.Fatalf("id %d was %s %s on the stream and is %s %s in the timeline", f.Seq, s.Event, s.Data, f.Event, f.Data)
		}
	}
}

// A confirmation whose run ends (cancelled, or its process killed before
// the wait was recorded) ends with it: it is no longer pending, and
// approving it is refused, since nothing would run.
func TestConfirmationEndsWithItsRun(t *testing.T) {
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{})
	solo := c.Start("solo", embedded...)
	ask := func() (runID, confirmationID string) {
		chat := c.Chat(solo, map[string]any{"input": `Send a Feishu message saying "deploy done"`})
		runID = started(t, chat)
		frames, err := chat.ReadUntil(10*time.Second, func(f clustertest.Frame) bool { return f.Event == "tool.awaiting_input" })
		if err != nil {
			t.Fatal(err)
		}
		chat.Close()
		return runID, frames[len(frames)-1].Field("confirmationId")
	}
	decide := func(id string) (int, string) {
		resp, body := c.Do(solo, http.MethodPost, "/v1/agent/confirmations/"+id, map[string]any{"decision": "approve"})
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		return resp.StatusCode, e.Error.Code
	}
	pending := func() int {
		_, body := c.Do(solo, http.MethodGet, "/v1/agent/confirmations?status=pending", nil)
		var l struct {
			Confirmations []json.RawMessage `json:"confirmations"`
		}
		if err := json.Unmarshal(body, &l); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return len(l.Confirmations)
	}

	// Cancelled.
	runID, conf := ask()
	if resp, body := c.Do(solo, http.MethodPost, "/v1/agent/runs/"+runID+"/cancel", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", resp.StatusCode, body)
	}
	if n := pending(); n != 0 {
		t.Fatalf("%d confirmations pending after the cancel", n)
	}
	if status, code := decide(conf); status != http.StatusConflict || code != "confirmation_run_ended" {
		t.Fatalf("approve after the cancel: %d %s", status, code)
	}

	// Killed the moment the client was told, then started again: the run
	// either had recorded its wait (and a decision continues it) or had not
	// (and it ended failed, its confirmation with it). "Approved" is said
	// only in the first case.
	runID, conf = ask()
	solo.Kill()
	solo = c.Start("solo", embedded...)
	_, body := c.Do(solo, http.MethodGet, "/v1/agent/runs/"+runID, nil)
	var r struct{ Status string }
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	status, code := decide(conf)
	switch r.Status {
	case "awaiting_input":
		if status != http.StatusOK {
			t.Fatalf("approve a waiting run's confirmation after the restart: %d %s", status, code)
		}
		s := c.Attach(solo, runID, 0)
		defer s.Close()
		if _, err := s.ReadUntil(10*time.Second, clustertest.IsEnd); err != nil {
			t.Fatalf("the approved run did not end: %v", err)
		}
	case "failed":
		if status != http.StatusConflict || code != "confirmation_run_ended" {
			t.Fatalf("approve a failed run's confirmation: %d %s", status, code)
		}
	default:
		t.Fatalf("run after the restart: %s", body)
	}
}
