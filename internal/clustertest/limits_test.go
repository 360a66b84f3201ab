package clustertest_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/clustertest"
)

// TestRunsPerMinuteAcrossReplicaProcesses: two `agentchat serve` processes
// over one PostgreSQL and one Redis, hammered at once by one tenant, admit
// exactly its runs per minute between them (the store counts the starts
// under the tenant's lock), and refuse the rest with 429 rate_limited;
// another tenant chats on both meanwhile. The starts fall within one
// minute of the servers' clock (they take well under a second); the
// window sliding on is proven with an injected clock in internal/httpapi
// (TestTwoReplicasAdmitNoMoreThanTheLimit).
func TestRunsPerMinuteAcrossReplicaProcesses(t *testing.T) {
	t.Parallel()
	const (
		limit = 3
		per   = 6 // starts per replica
		other = "clustertest-other-tenant-token"
	)
	c := clustertest.New(t, clustertest.Options{Env: []string{
		"AGENTCHAT_TOKENS=" + clustertest.Token + ":acme:alice," + other + ":globex:gina",
		"AGENTCHAT_RUNS_PER_MINUTE=3",
		"AGENTCHAT_SCRIPTED_TOKEN_DELAY=1ms",
	}})
	replicas := []*clustertest.Replica{c.Start("a"), c.Start("b")}

	var mu sync.Mutex
	admitted, refused := 0, 0
	var wg sync.WaitGroup
	for _, r := range replicas {
		for range per {
			wg.Go(func() {
				s, status, body := c.TryChat(r, map[string]any{"input": "hi"})
				switch {
				case s != nil:
					frames, err := s.ReadUntil(20*time.Second, clustertest.IsEnd)
					if err != nil || len(frames) == 0 || !clustertest.IsEnd(frames[len(frames)-1]) {
						t.Errorf("%s: an admitted run did not end: %v", r.Name, err)
					}
					mu.Lock()
					admitted++
					mu.Unlock()
				case status == http.StatusTooManyRequests && strings.Contains(body, `"rate_limited"`):
					mu.Lock()
					refused++
					mu.Unlock()
				default:
					t.Errorf("%s: %d %s", r.Name, status, body)
				}
			})
		}
		wg.Go(func() {
			if body := chatAs(t, r, other); !strings.Contains(body, "event: agent.end") || !strings.Contains(body, `"status":"succeeded"`) {
				t.Errorf("%s: the other tenant's run: %.300s", r.Name, body)
			}
		})
	}
	wg.Wait()
	if admitted != limit || refused != 2*per-limit {
		t.Fatalf("%d admitted and %d refused of %d starts; want %d admitted", admitted, refused, 2*per, limit)
	}
}

// chatAs runs a native chat on r with token and returns the whole stream.
func chatAs(t *testing.T, r *clustertest.Replica, token string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+"/v1/agent/chat", bytes.NewReader([]byte(`{"input":"hi"}`)))
	if err != nil {
		t.Error(err)
		return ""
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%s: %d %s", r.Name, resp.StatusCode, b)
	}
	return string(b)
}
