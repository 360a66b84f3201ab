package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/usage"
)

// Issue 24's "done when" proofs that go through the whole stack: replicas
// admitting no more runs than a limit, every surface's end equal to the
// usage API, a month's cost equal to the sum of its runs.

// TestTwoReplicasAdmitNoMoreThanTheLimit: two replicas (each its own
// connection pool, run service and HTTP server) over one PostgreSQL
// database, hammered at once by one tenant's users, admit exactly the
// tenant's runs per minute between them; another tenant chats on both
// meanwhile. The clock is the replicas' shared, injected one: a minute
// later (no sleep) exactly as many more are admitted.
func TestTwoReplicasAdmitNoMoreThanTheLimit(t *testing.T) {
	t.Parallel()
	const limit = 4
	var clock atomic.Int64 // both replicas' clock, in Unix milliseconds
	clock.Store(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC).UnixMilli())
	o := options{pgURL: postgresSchema(t), limits: usage.Policy{RunsPerMinute: limit},
		now: func() time.Time { return time.UnixMilli(clock.Load()) }}
	replicas := []*env{setup(t, o), setup(t, o)}

	// wave starts per starts on each replica at once, alice's and bob's
	// alternately, while eve (another tenant) chats on each replica; it
	// counts the answers. An admitted run is read to its end.
	wave := func(per int) (admitted, refused int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for ri, e := range replicas {
			for i := range per {
				token := []string{alice, bob}[i%2]
				wg.Go(func() {
					resp := e.send(req{method: "POST", path: "/v1/agent/chat", token: token, body: map[string]any{"input": "hi"}})
					raw, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					mu.Lock()
					defer mu.Unlock()
					switch {
					case resp.StatusCode == http.StatusOK && strings.Contains(string(raw), "event: agent.end"):
						admitted++
					case resp.StatusCode == http.StatusTooManyRequests && strings.Contains(string(raw), `"rate_limited"`) &&
						resp.Header.Get("Retry-After") != "" && resp.Header.Get("RateLimit") != "":
						refused++
					default:
						t.Errorf("replica %d: %d %s", ri, resp.StatusCode, raw)
					}
				})
			}
			wg.Go(func() {
				if end := last(e.chat(eve, map[string]any{"input": "hi"})); end.Event != "agent.end" || end.Data["status"] != "succeeded" {
					t.Errorf("replica %d: the other tenant's run ended %v", ri, end.Data)
				}
			})
		}
		wg.Wait()
		return admitted, refused
	}

	if admitted, refused := wave(8); admitted != limit || refused != 16-limit {
		t.Fatalf("first minute: %d admitted, %d refused; want %d and %d", admitted, refused, limit, 16-limit)
	}
	clock.Add(time.Minute.Milliseconds())
	if admitted, refused := wave(8); admitted != limit || refused != 16-limit {
		t.Fatalf("next minute: %d admitted, %d refused; want %d and %d", admitted, refused, limit, 16-limit)
	}
	// What the replicas recorded: the admitted runs, of either replica,
	// through either.
	for i, e := range replicas {
		tot := e.call(req{method: "GET", path: "/v1/usage?from=2026-05-01", token: root}, http.StatusOK)["total"].(map[string]any)
		if tot["runs"] != float64(2*limit) {
			t.Errorf("replica %d counts %v runs of the tenant, want %d", i, tot["runs"], 2*limit)
		}
	}
}

// number is a JSON number, decoded as float64 or json.Number; NaN for anything else.
func number(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case json.Number:
		f, err := n.Float64()
		if err == nil {
			return f
		}
	}
	return math.NaN()
}

// usageDelta is the tenant's usage total before and after fn, as the usage
// API answers: input tokens, output tokens, runs, cost.
func (e *env) usageDelta(fn func()) (in, out, runs, cost float64) {
	e.t.Helper()
	read := func() map[string]any {
		return e.call(req{method: "GET", path: "/v1/usage", token: root}, http.StatusOK)["total"].(map[string]any)
	}
	before := read()
	fn()
	after := read()
	d := func(k string) float64 { return after[k].(float64) - before[k].(float64) }
	return d("inputTokens"), d("outputTokens"), d("runs"), d("cost")
}

// TestEverySurfaceEndCarriesTheUsageAPIsUsage: each format's end (native
// agent.end, AG-UI RUN_FINISHED's usage list, the AI SDK finish's
// messageMetadata.usage, the observable done.usage, the chain final's
// envelope usage) and the run's timeline carry the usage that the usage
// API adds for that run.
func TestEverySurfaceEndCarriesTheUsageAPIsUsage(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	check := func(surface string, in, out, runs float64, gotIn, gotOut any) {
		t.Helper()
		if runs != 1 || in == 0 || out == 0 || number(gotIn) != in || number(gotOut) != out {
			t.Errorf("%s: the end carries %v in / %v out; the usage API added %v / %v in %v runs", surface, gotIn, gotOut, in, out, runs)
		}
	}

	var end map[string]any
	var runID string
	in, out, runs, _ := e.usageDelta(func() {
		fs := e.chat(alice, map[string]any{"input": "tell me a story about a fox"})
		end, _ = last(fs).Data["usage"].(map[string]any)
		runID, _ = fs[0].Data["runId"].(string)
		if runID == "" {
			start, _ := find(fs, "agent.start")
			runID, _ = start.Data["runId"].(string)
		}
	})
	check("native agent.end", in, out, runs, end["inputTokens"], end["outputTokens"])

	tl := e.call(req{method: "GET", path: "/v1/agent/runs/" + runID + "/timeline", token: alice}, http.StatusOK)
	evs, _ := tl["events"].([]any)
	tlEnd, _ := evs[len(evs)-1].(map[string]any)
	payload, _ := tlEnd["payload"].(map[string]any)
	tlUsage, _ := payload["usage"].(map[string]any)
	check("the timeline's agent.end", in, out, runs, tlUsage["inputTokens"], tlUsage["outputTokens"])

	var list []any
	in, out, runs, _ = e.usageDelta(func() {
		evs := e.aguiRun(alice, input("thread-usage", "run-usage", userMsg("msg-u1", "tell me a story about a fox")))
		fin := ofType(evs, "RUN_FINISHED")
		list, _ = fin[0].Data["usage"].([]any)
	})
	if len(list) != 1 {
		t.Fatalf("AG-UI RUN_FINISHED usage %v: want one model", list)
	}
	m := list[0].(map[string]any)
	check("AG-UI RUN_FINISHED", in, out, runs, m["inputTokens"], m["outputTokens"])
	if number(m["totalTokens"]) != in+out || m["model"] == "" {
		t.Errorf("AG-UI usage entry %v", m)
	}

	var meta map[string]any
	in, out, runs, _ = e.usageDelta(func() {
		s := e.uiChat(alice, transportBody("chat-usage", "submit-message", "", userMessage("u1", "tell me a story about a fox")))
		fin := s.chunks[len(s.chunks)-1]
		md, _ := fin["messageMetadata"].(map[string]any)
		meta, _ = md["usage"].(map[string]any)
	})
	check("AI SDK finish", in, out, runs, meta["inputTokens"], meta["outputTokens"])

	var done map[string]any
	in, out, runs, _ = e.usageDelta(func() {
		fs := e.conversationTurn(alice, map[string]any{"input": "tell me a story about a fox"})
		done, _ = fs[len(fs)-1].Data["usage"].(map[string]any)
	})
	check("observable done", in, out, runs, done["inputTokens"], done["outputTokens"])

	ce := chainSetup(t, options{})
	var final map[string]any
	in, out, runs, _ = ce.usageDelta(func() {
		rd, _ := ce.chain(chainPath("tell me a story about a fox", 0), nil)
		fs := rd.readAll(nil)
		if len(fs) == 0 || fs[len(fs)-1].Event != "final" {
			t.Fatalf("chain frames %v", fs)
		}
		final, _ = fs[len(fs)-1].Env["usage"].(map[string]any)
	})
	check("chain final", in, out, runs, final["inputTokens"], final["outputTokens"])
}

// TestMonthCostIsTheSumOfItsRuns: with a priced model, the month's cost
// from the usage API is the sum of the costs every run's end reported, and
// of its groups by day, user and model (compared in nano-units: sums of
// prices are exact there).
func TestMonthCostIsTheSumOfItsRuns(t *testing.T) {
	t.Parallel()
	models := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(models, []byte(`{"models": {"priced": {"provider": "scripted",
		"price": {"input": 2.5, "cachedInput": 1.25, "output": 10, "currency": "USD"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e := setup(t, options{agents: true, modelsFile: models})
	created := e.call(req{method: "POST", path: "/v1/agents", token: root, body: map[string]any{"name": "Priced", "model": "priced"}}, http.StatusCreated)
	agentID := created["id"].(string)

	// The usage API's cost is in currency units; agent.end's is in
	// nano-units (an integer, as the OpenAPI document says).
	nanos := func(v any) int64 { f, _ := v.(float64); return int64(math.Round(f * 1e9)) }
	var sum int64
	inputs := []string{"hello there", "tell me a story about a fox", "what time is it in Tokyo?", "hi"}
	for i, tok := range []string{alice, bob, root, alice} {
		fs := e.chat(tok, map[string]any{"input": inputs[i], "agentId": agentID})
		u, _ := last(fs).Data["usage"].(map[string]any)
		cost, _ := u["cost"].(float64)
		if cost <= 0 || cost != math.Trunc(cost) || u["currency"] != "USD" {
			t.Fatalf("run %d's end usage %v: want a cost in nano-USD", i, u)
		}
		sum += int64(cost)
	}
	// One run on the built-in agent, whose model has no price: it costs nothing.
	if u, _ := last(e.chat(bob, map[string]any{"input": "hi"})).Data["usage"].(map[string]any); u["cost"] != nil {
		t.Errorf("an unpriced run cost %v", u["cost"])
	}

	month := time.Now().UTC().Format("2006-01")
	body := e.call(req{method: "GET", path: "/v1/usage?from=" + month + "-01", token: root}, http.StatusOK)
	total := body["total"].(map[string]any)
	if got := nanos(total["cost"]); got != sum || total["runs"] != float64(5) || total["currency"] != "USD" {
		t.Fatalf("the month's total %v (cost %d nano-USD); the runs' ends sum to %d in 5 runs", total, got, sum)
	}
	for _, by := range []string{"day", "user", "model", "agent"} {
		var groups int64
		for _, g := range e.call(req{method: "GET", path: "/v1/usage?groupBy=" + by, token: root}, http.StatusOK)["groups"].([]any) {
			groups += nanos(g.(map[string]any)["cost"])
		}
		if groups != sum {
			t.Errorf("groups by %s sum to %d nano-USD, want %d", by, groups, sum)
		}
	}
	// The CSV for finance says the same.
	resp := e.send(req{method: "GET", path: "/v1/usage?groupBy=user&format=csv", token: root})
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if want := fmt.Sprintf(",%.9f,USD,", float64(sum)/1e9); !strings.HasPrefix(lines[len(lines)-1], "total,,5,") || !strings.Contains(lines[len(lines)-1], want) {
		t.Errorf("csv total %q, want the cost %s", lines[len(lines)-1], want)
	}
}

// TestQuotaRefusalOnEverySurface: each surface shows a spent budget its
// own way. A run that spends the tenant's tokens for the day in its first
// model call stops before its second with the format's error and failed
// end (quota_exceeded, a message naming the limit), which carries the
// usage the usage API recorded for the run; the next start on the same
// surface is a JSON 429 quota_exceeded before any stream.
func TestQuotaRefusalOnEverySurface(t *testing.T) {
	t.Parallel()
	const prompt = "what time is it in Tokyo?" // a tool call first, then an answer
	o := options{limits: usage.Policy{TokensPerDay: 1}}
	named := regexp.MustCompile(`this workspace's limit of 1 tokens per day is reached; it resets at `)
	// recorded checks that a failed run's end carried the usage the usage
	// API recorded for it (the only run of the day).
	recorded := func(e *env, surface string, in, out any) {
		t.Helper()
		tot := e.call(req{method: "GET", path: "/v1/usage", token: alice}, http.StatusOK)["total"].(map[string]any)
		if tot["runs"] != float64(1) || number(in) != tot["inputTokens"] || number(out) != tot["outputTokens"] {
			t.Errorf("%s: the failed end carries %v in / %v out; the usage API recorded %v", surface, in, out, tot)
		}
	}
	refusedAfter := func(e *env, r req) {
		t.Helper()
		errObj := e.apiError(r, http.StatusTooManyRequests, "quota_exceeded")
		if msg, _ := errObj["message"].(string); !named.MatchString(msg) {
			t.Errorf("%s %s: 429 message %q", r.method, r.path, msg)
		}
	}

	t.Run("native", func(t *testing.T) {
		t.Parallel()
		e := setup(t, o)
		fs := e.chat(alice, map[string]any{"input": prompt})
		errFrame, _ := find(fs, "error")
		if end := last(fs); end.Event != "agent.end" || end.Data["status"] != "failed" || errFrame.Data["code"] != "quota_exceeded" ||
			!named.MatchString(fmt.Sprint(errFrame.Data["message"])) {
			t.Errorf("native: error %v, end %v", errFrame.Data, end.Data)
		}
		u, _ := last(fs).Data["usage"].(map[string]any)
		recorded(e, "native", u["inputTokens"], u["outputTokens"])
		refusedAfter(e, req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hi"}})
	})

	t.Run("agui", func(t *testing.T) {
		t.Parallel()
		e := setup(t, o)
		evs := e.aguiRun(alice, input("thread-q", "run-q", userMsg("msg-q", prompt)))
		runErr := ofType(evs, "RUN_ERROR")
		if len(runErr) != 1 || runErr[0].Str("code") != "quota_exceeded" || !named.MatchString(runErr[0].Str("message")) ||
			len(ofType(evs, "TOOL_CALL_RESULT")) != 1 {
			t.Errorf("AG-UI: %v", evTypes(evs))
		}
		if list, _ := runErr[len(runErr)-1].Data["usage"].([]any); len(list) != 1 {
			t.Errorf("AG-UI RUN_ERROR usage %v", list)
		} else {
			m := list[0].(map[string]any)
			recorded(e, "AG-UI", m["inputTokens"], m["outputTokens"])
		}
		refusedAfter(e, req{method: "POST", path: "/api/v1/agent/runs", token: alice, header: map[string]string{"Accept": "text/event-stream"},
			body: input("thread-q2", "run-q2", userMsg("msg-q2", "hi"))})
	})

	t.Run("vercel", func(t *testing.T) {
		t.Parallel()
		e := setup(t, o)
		s := e.uiChat(alice, transportBody("chat-q", "submit-message", "", userMessage("u1", prompt)))
		var errText string
		for _, ch := range s.chunks {
			if ch["type"] == "error" {
				errText, _ = ch["errorText"].(string)
			}
		}
		if fin := s.chunks[len(s.chunks)-1]; !named.MatchString(errText) || fin["finishReason"] != "error" ||
			!slices.Contains(s.types(), "tool-output-available") {
			t.Errorf("AI SDK: error %q, chunks %v", errText, s.types())
		}
		md, _ := s.chunks[len(s.chunks)-1]["messageMetadata"].(map[string]any)
		u, _ := md["usage"].(map[string]any)
		recorded(e, "AI SDK", u["inputTokens"], u["outputTokens"])
		refusedAfter(e, req{method: "POST", path: uiPath, token: alice, body: transportBody("chat-q2", "submit-message", "", userMessage("u2", "hi"))})
	})

	t.Run("conversation", func(t *testing.T) {
		t.Parallel()
		e := setup(t, o)
		fs := e.conversationTurn(alice, map[string]any{"input": prompt})
		i := indexOf(fs, "error")
		if i < 0 || fs[i].Data["code"] != "quota_exceeded" || !named.MatchString(fmt.Sprint(fs[i].Data["message"])) ||
			fs[len(fs)-1].Event != "done" || fs[len(fs)-1].Data["status"] != "failed" || indexOf(fs, "tool_result") < 0 {
			t.Errorf("observable: %v", frameNames(fs))
		}
		u, _ := fs[len(fs)-1].Data["usage"].(map[string]any)
		recorded(e, "observable", u["inputTokens"], u["outputTokens"])
		refusedAfter(e, req{method: "POST", path: "/v1/agent/chat?format=conversation", token: alice, body: map[string]any{"input": "hi"}})
	})

	t.Run("chain", func(t *testing.T) {
		t.Parallel()
		e := chainSetup(t, o)
		rd, _ := e.chain(chainPath(prompt, 0), nil)
		fs := rd.readAll(nil)
		var errPayload map[string]any
		for _, f := range fs {
			if f.Event == "error" {
				errPayload, _ = f.Env["payload"].(map[string]any)
			}
		}
		if len(fs) == 0 || fs[len(fs)-1].Event != "final" || errPayload["code"] != "quota_exceeded" ||
			!named.MatchString(fmt.Sprint(errPayload["message"])) || !named.MatchString(fmt.Sprint(fs[len(fs)-1].Env["payload"])) {
			t.Errorf("chain: error %v, frames %v", errPayload, fs)
		}
		refusedAfter(e, req{method: "GET", path: chainPath("hi", 0), token: alice})
	})
}
