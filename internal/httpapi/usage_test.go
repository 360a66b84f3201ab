package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/usage"
)

// endUsage is the usage an agent.end frame carried.
func endUsage(t *testing.T, fs []native) (in, out float64) {
	t.Helper()
	end := last(fs)
	if end.Event != "agent.end" {
		t.Fatalf("last frame %s, want agent.end", end.Event)
	}
	u, _ := end.Data["usage"].(map[string]any)
	in, _ = u["inputTokens"].(float64)
	out, _ = u["outputTokens"].(float64)
	if in == 0 || out == 0 {
		t.Fatalf("agent.end usage %v: want input and output tokens", u)
	}
	if models, _ := u["models"].([]any); len(models) != 1 {
		t.Fatalf("agent.end usage %v: want one model", u)
	}
	return in, out
}

// TestUsageEqualsWhatStreamsReported: the usage API's totals are the sum of
// what the streams' ends carried; a member sees their own, an admin the
// tenant's, another tenant nothing of it.
func TestUsageEqualsWhatStreamsReported(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, o options) {
		e := setup(t, o)
		var aliceIn, aliceOut, bobIn, bobOut float64
		for _, input := range []string{"hello there", "tell me a story about a fox"} {
			in, out := endUsage(t, e.chat("alice-token", map[string]any{"input": input}))
			aliceIn, aliceOut = aliceIn+in, aliceOut+out
		}
		bobIn, bobOut = endUsage(t, e.chat("bob-token", map[string]any{"input": "hi"}))
		endUsage(t, e.chat("eve-token", map[string]any{"input": "hi"}))

		total := func(body map[string]any) (in, out, runs float64) {
			tot, _ := body["total"].(map[string]any)
			return tot["inputTokens"].(float64), tot["outputTokens"].(float64), tot["runs"].(float64)
		}
		if in, out, runs := total(e.call(req{method: "GET", path: "/v1/usage", token: "alice-token"}, http.StatusOK)); in != aliceIn || out != aliceOut || runs != 2 {
			t.Errorf("alice's usage %v/%v in %v runs, want %v/%v in 2", in, out, runs, aliceIn, aliceOut)
		}
		body := e.call(req{method: "GET", path: "/v1/usage?groupBy=user", token: "root-token"}, http.StatusOK)
		if in, out, runs := total(body); in != aliceIn+bobIn || out != aliceOut+bobOut || runs != 3 {
			t.Errorf("the tenant's usage %v/%v in %v runs, want %v/%v in 3", in, out, runs, aliceIn+bobIn, aliceOut+bobOut)
		}
		if groups, _ := body["groups"].([]any); len(groups) != 2 || groups[0].(map[string]any)["key"] != "alice" {
			t.Errorf("groups by user %v", groups)
		}
		if in, _, _ := total(e.call(req{method: "GET", path: "/v1/usage?userId=bob", token: "root-token"}, http.StatusOK)); in != bobIn {
			t.Errorf("bob's usage for the admin %v, want %v", in, bobIn)
		}
		e.apiError(req{method: "GET", path: "/v1/usage?userId=bob", token: "alice-token"}, http.StatusForbidden, "admin_required")
		e.apiError(req{method: "GET", path: "/v1/usage?groupBy=user", token: "alice-token"}, http.StatusForbidden, "admin_required")
		e.apiError(req{method: "GET", path: "/v1/usage?groupBy=week", token: "alice-token"}, http.StatusBadRequest, "invalid_query")
		e.apiError(req{method: "GET", path: "/v1/usage?from=yesterday", token: "alice-token"}, http.StatusBadRequest, "invalid_query")
		if _, _, runs := total(e.call(req{method: "GET", path: "/v1/usage?to=2000-01-02&from=2000-01-01", token: "root-token"}, http.StatusOK)); runs != 0 {
			t.Errorf("a range without runs holds %v", runs)
		}
		byDay := e.call(req{method: "GET", path: "/v1/usage?groupBy=day", token: "alice-token"}, http.StatusOK)
		if groups, _ := byDay["groups"].([]any); len(groups) != 1 || groups[0].(map[string]any)["key"] != time.Now().UTC().Format(time.DateOnly) {
			t.Errorf("alice's days %v", groups)
		}

		resp := e.send(req{method: "GET", path: "/v1/usage?groupBy=model&format=csv", token: "root-token"})
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") || len(lines) != 3 ||
			!strings.HasPrefix(lines[0], "key,provider,runs") || !strings.HasPrefix(lines[2], "total,,3,") {
			t.Errorf("csv %d %q:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
		}
	})
}

// TestRunsPerMinuteAcrossStarts: racing starts of one tenant admit exactly
// its runs per minute; the refusal is a 429 rate_limited with Retry-After
// and the RateLimit headers; another tenant keeps chatting.
func TestRunsPerMinuteAcrossStarts(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, o options) {
		var clock atomic.Int64 // the run service's clock, in Unix milliseconds
		clock.Store(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC).UnixMilli())
		o.limits = usage.Policy{RunsPerMinute: 3}
		o.now = func() time.Time { return time.UnixMilli(clock.Load()) }
		e := setup(t, o)
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		var refused *http.Response
		for range 8 {
			wg.Go(func() {
				resp := e.send(req{method: "POST", path: "/v1/agent/chat", token: "alice-token", body: map[string]any{"input": "hi"}})
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				defer mu.Unlock()
				codes[resp.StatusCode]++
				if resp.StatusCode == http.StatusTooManyRequests {
					refused = resp
				}
			})
		}
		wg.Wait()
		if codes[http.StatusOK] != 3 || codes[http.StatusTooManyRequests] != 5 {
			t.Fatalf("statuses %v, want 3 admitted and 5 refused", codes)
		}
		if refused.Header.Get("Retry-After") != "60" || refused.Header.Get("RateLimit-Policy") != `"tenant-runs_per_minute";q=3;w=60` ||
			refused.Header.Get("RateLimit") != `"tenant-runs_per_minute";r=0;t=60` {
			t.Errorf("refusal headers %v", refused.Header)
		}
		errObj := e.apiError(req{method: "POST", path: "/v1/agent/chat", token: "bob-token", body: map[string]any{"input": "hi"}}, http.StatusTooManyRequests, "rate_limited")
		if msg, _ := errObj["message"].(string); !strings.Contains(msg, "3 runs per minute") || !strings.Contains(msg, "2026-05-01T09:01:00Z") {
			t.Errorf("message %q: want the limit and when it resets", msg)
		}
		endUsage(t, e.chat("eve-token", map[string]any{"input": "hi"})) // another tenant
		clock.Add(time.Minute.Milliseconds())                           // the window slides
		endUsage(t, e.chat("bob-token", map[string]any{"input": "hi"}))
	})
}

// TestTokenBudgetStopsARunBetweenModelCalls: a run that spends its tenant's
// daily tokens stops before its next model call with quota_exceeded, its
// first call's answer kept; the next start is refused before any stream.
func TestTokenBudgetStopsARunBetweenModelCalls(t *testing.T) {
	t.Parallel()
	o := options{limits: usage.Policy{TokensPerDay: 1}}
	e := setup(t, o)
	fs := e.chat("alice-token", map[string]any{"input": "what time is it in Tokyo?"})
	end := last(fs)
	if end.Event != "agent.end" || end.Data["status"] != "failed" {
		t.Fatalf("end %v, want failed", end.Data)
	}
	if errInfo, _ := end.Data["error"].(map[string]any); errInfo["code"] != "quota_exceeded" ||
		!strings.Contains(errInfo["message"].(string), "1 tokens per day") {
		t.Errorf("end error %v", end.Data["error"])
	}
	if _, ok := find(fs, "error"); !ok {
		t.Errorf("no error event before the failed end: %v", names(fs))
	}
	toolDone := false
	for _, f := range fs {
		if f.Event == "tool.state" && f.Data["status"] == "succeeded" {
			toolDone = true
		}
	}
	if !toolDone {
		t.Errorf("the first model call's tool call did not complete: %v", names(fs))
	}
	conv, _ := fs[0].Data["conversationId"].(string)
	msgs := e.call(req{method: "GET", path: "/v1/conversations/" + conv + "/messages", token: "alice-token"}, http.StatusOK)
	if items, _ := msgs["messages"].([]any); len(items) < 3 {
		t.Errorf("messages kept %d, want the user's, the assistant's tool call and its result", len(items))
	}
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: "alice-token", body: map[string]any{"input": "hi"}}, http.StatusTooManyRequests, "quota_exceeded")
	limits := e.call(req{method: "GET", path: "/v1/usage/limits", token: "alice-token"}, http.StatusOK)
	if ls, _ := limits["limits"].([]any); len(ls) != 1 || ls[0].(map[string]any)["used"].(float64) < 1 {
		t.Errorf("limits %v", limits)
	}
}
