package clustertest_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/clustertest"
)

// Agents across replicas (issue 21): an agent changed on one replica is in
// effect on the other at once (the bus carries the invalidation; how soon
// is logged), and so is a rollback; a run names the version it used.
func TestAgentChangeReachesEveryReplica(t *testing.T) {
	t.Parallel()
	models := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(models, []byte(`{"models": {"offline": {"provider": "scripted"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := clustertest.New(t, clustertest.Options{Env: []string{
		"AGENTCHAT_TOKENS=" + clustertest.Token + ":acme:alice:admin",
		"AGENTCHAT_MODELS_FILE=" + models,
		"AGENTCHAT_SCRIPTED_TOKEN_DELAY=1ms",
	}})
	a, b := c.Start("a"), c.Start("b")

	resp, body := c.Do(a, http.MethodPost, "/v1/agents", map[string]any{"name": "Support", "model": "offline", "instructions": "Support v1."})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal(body, &created)

	// version runs the agent on r and reads the version agent.start names.
	version := func(r *clustertest.Replica) int {
		s := c.Chat(r, map[string]any{"input": "hello", "agentId": created.ID})
		defer s.Close()
		frames, err := s.ReadUntil(10*time.Second, func(f clustertest.Frame) bool { return f.Event == "agent.start" })
		if err != nil || len(frames) == 0 {
			t.Fatalf("no agent.start on %s: %v", r.Name, err)
		}
		var start struct {
			AgentID      string `json:"agentId"`
			AgentVersion int    `json:"agentVersion"`
		}
		_ = json.Unmarshal(frames[len(frames)-1].Data, &start)
		if start.AgentID != created.ID {
			t.Fatalf("agent.start on %s names %q", r.Name, start.AgentID)
		}
		return start.AgentVersion
	}
	if v := version(b); v != 1 { // b has read (and cached) version 1
		t.Fatalf("b runs version %d", v)
	}

	// The bound is a second, and the bus carries a change in a few
	// milliseconds on a quiet machine (logged below); a loaded one has taken
	// 665 ms. What the test asserts is that the bus carried it: without the
	// bus, a replica's cached copy lasts agent.DefaultMaxStale (30 s), so a
	// bound well under that still fails a lost invalidation, and a stalled
	// machine does not fail it.
	const within = 10 * time.Second
	change := func(method, path string, body any, want int) {
		t.Helper()
		resp, raw := c.Do(a, method, path, body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
		made := time.Now()
		clustertest.Eventually(t, within, "the change in effect on the other replica", func() bool { return version(b) == want })
		t.Logf("%s %s: in effect on the other replica after %s", method, path, time.Since(made).Round(time.Millisecond))
	}
	change(http.MethodPatch, "/v1/agents/"+created.ID, map[string]any{"instructions": "Support v2."}, 2)
	change(http.MethodPost, "/v1/agents/"+created.ID+"/publish", map[string]any{"version": 1}, 1) // a rollback
	if v := version(a); v != 1 {
		t.Fatalf("a runs version %d after the rollback", v)
	}
}
