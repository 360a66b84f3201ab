package clustertest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/clustertest"
)

// The fault tests of issue 7: two or three replicas over one PostgreSQL and
// one Redis, and a client that alternates between them, through a replica
// crash, a Redis crash, the database going away, and reconnections from
// every position. Each test bounds its waits; the suite takes well under two
// minutes.

func TestMain(m *testing.M) {
	code := m.Run()
	clustertest.Cleanup()
	os.Exit(code)
}

// leaseTTL is the lease of the tests that wait for one to lapse.
const leaseTTL = clustertest.ShortLease

// survivorLease is the environment of a replica that must not lose its
// lease in a test whose other replica's lease lapses: the default lease, so
// that no stall of a loaded machine fences it (a replica's lease is its
// own; the short one is for the replica whose lapse the test waits for).
var survivorLease = "AGENTCHAT_LEASE_TTL=" + clustertest.DefaultLease.String()

// upstream serves a fake OpenAI-compatible model answering tokens words,
// paced, from a process of its own, and returns the environment pointing
// replicas at it.
func upstream(t *testing.T, tokens int, pace time.Duration) []string {
	t.Helper()
	return clustertest.StartModel(t, clustertest.ModelOptions{Tokens: tokens, Pace: pace}).Env()
}

// heldUpstream is upstream with every stream held after its first
// holdAfter frames (about as many tokens) until release is called (or the
// test ends): a test that must act while a run is mid-stream holds it
// there, instead of counting on a pace to be slow enough on a loaded
// machine.
func heldUpstream(t *testing.T, tokens int, pace time.Duration, holdAfter int) (env []string, release func()) {
	t.Helper()
	m := clustertest.StartModel(t, clustertest.ModelOptions{Tokens: tokens, Pace: pace, Hold: true, HoldAfter: holdAfter})
	return m.Env(), m.Release
}

// started reads a chat's stream until its agent.start and returns the run id.
func started(t *testing.T, s *clustertest.Stream) string {
	t.Helper()
	frames, err := s.ReadUntil(10*time.Second, func(f clustertest.Frame) bool { return f.Event == "agent.start" })
	if err != nil || len(frames) == 0 || frames[len(frames)-1].Event != "agent.start" {
		t.Fatalf("no agent.start: %v %v", frames, err)
	}
	id := s.Header.Get("X-Run-ID")
	if id == "" {
		t.Fatal("no X-Run-ID")
	}
	return id
}

// deltas reads a chat's stream until n more agent.delta frames came: the
// run is under way.
func deltas(t *testing.T, s *clustertest.Stream, n int) {
	t.Helper()
	seen := 0
	if _, err := s.ReadUntil(20*time.Second, func(f clustertest.Frame) bool {
		if f.Event == "agent.delta" {
			seen++
		}
		return seen == n
	}); err != nil || seen < n {
		t.Fatalf("%d deltas of %d: %v", seen, n, err)
	}
}

func countEvent(frames []clustertest.Frame, name string) int {
	n := 0
	for _, f := range frames {
		if f.Event == name {
			n++
		}
	}
	return n
}

// follow reads a run to its end as a resilient client does: when a stream
// stops before the end, it reconnects with the last id it saw, to the next
// replica in turn. It returns every frame it got, in order.
func follow(t *testing.T, c *clustertest.Cluster, replicas []*clustertest.Replica, runID string, within time.Duration) []clustertest.Frame {
	t.Helper()
	frames, err := resume(t, c, replicas, runID, within, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

// resume is follow for a goroutine other than the test's (where t.Fatal
// must not be called), from the frame with SSE id last ("" from the
// start): it returns the frames after it, or an error instead of failing
// the test. A connection that fails, or a 5xx, is tried again, as a
// browser's EventSource retries a network error (any other refusal is
// an error). seen, if not nil, is called with every frame as it
// comes.
func resume(t *testing.T, c *clustertest.Cluster, replicas []*clustertest.Replica, runID string, within time.Duration, last string, seen func(clustertest.Frame)) ([]clustertest.Frame, error) {
	deadline := time.Now().Add(within)
	var all []clustertest.Frame
	for i := 0; ; i++ {
		if time.Now().After(deadline) {
			return all, fmt.Errorf("run %s: no end within %s; got %d frames, the last %q", runID, within, len(all), last)
		}
		r := replicas[i%len(replicas)]
		if !r.Alive() {
			continue
		}
		s, status, msg := c.TryResume(r, runID, last)
		if s == nil {
			if status != 0 && status < http.StatusInternalServerError {
				return all, fmt.Errorf("run %s: attach to %s after %q: %d %s", runID, r.Name, last, status, msg)
			}
			// No answer (the connection failed) or the replica cannot
			// serve the stream now (503): a client tries again.
			t.Logf("attach to %s: %d %s; retrying", r.Name, status, msg)
			time.Sleep(100 * time.Millisecond) // a client's reconnection delay, not a wait for an event
			continue
		}
		frames, _ := s.ReadUntil(time.Until(deadline), func(f clustertest.Frame) bool {
			if seen != nil && f.ID != "" {
				seen(f)
			}
			return clustertest.IsEnd(f)
		})
		s.Close()
		for _, f := range frames {
			if f.ID == "" { // a stream error frame: reconnect
				continue
			}
			all = append(all, f)
			last = f.ID
		}
		if len(all) > 0 && clustertest.IsEnd(all[len(all)-1]) {
			return all, nil
		}
		t.Logf("the stream on %s stopped before the end; resuming after %q", r.Name, last)
	}
}

// checkAgainstTimeline fails unless frames are exactly the run's stored
// timeline: every event once, in seq order, with the same content.
func checkAgainstTimeline(t *testing.T, c *clustertest.Cluster, r *clustertest.Replica, runID string, frames []clustertest.Frame) []clustertest.Frame {
	t.Helper()
	tl := c.Timeline(r, runID)
	if ok, diff := clustertest.Equal(frames, tl); !ok {
		t.Fatalf("the stream differs from the timeline: %s", diff)
	}
	for i := 1; i < len(tl); i++ {
		if tl[i].Seq < tl[i-1].Seq {
			t.Fatalf("timeline out of order at %d", i)
		}
	}
	return tl
}

func endStatus(t *testing.T, f clustertest.Frame) (status, code string) {
	t.Helper()
	var end struct {
		Status string `json:"status"`
		Error  *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(f.Data, &end); err != nil {
		t.Fatal(err)
	}
	if end.Error != nil {
		code = end.Error.Code
	}
	return end.Status, code
}

// kill -9 of the replica executing a run: a client attached to another
// replica gets a failed end once the lease lapses, and the conversation can
// go on through the survivor.
func TestKillExecutingReplica(t *testing.T) {
	t.Parallel()
	// a, killed, has the short lease, so b ends its run quickly; b, the
	// survivor, has the default one (a replica's lease is its own), so that
	// no stall of a loaded machine fences it.
	c := clustertest.New(t, clustertest.Options{Env: upstream(t, 600, 15*time.Millisecond), LeaseTTL: leaseTTL})
	a, b := c.Start("a"), c.Start("b", survivorLease)

	chat := c.Chat(a, map[string]any{"input": "tell me a long story"})
	runID := started(t, chat)
	conv := chat.Header.Get("X-Conversation-ID")
	watch := c.Attach(b, runID, -1)
	seen, err := watch.ReadUntil(10*time.Second, func(f clustertest.Frame) bool { return f.Event == "agent.delta" && f.Seq > 30 })
	if err != nil {
		t.Fatal(err)
	}
	a.Kill()
	killed := time.Now()
	rest, err := watch.ReadUntil(leaseTTL+5*time.Second, clustertest.IsEnd)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(killed)
	frames := append(seen, rest...)
	end := frames[len(frames)-1]
	if !clustertest.IsEnd(end) {
		t.Fatalf("the stream stopped without an end: last %v", end)
	}
	if status, code := endStatus(t, end); status != "failed" || code != "executor_lost" {
		t.Fatalf("end %v", end)
	}
	// The lease lapses after at most leaseTTL and a sweep ends the run; how
	// soon is logged, not asserted (a loaded machine stretches it), and the
	// wait above bounds it.
	t.Logf("failed end %s after kill -9 (lease %s)", took.Round(time.Millisecond), leaseTTL)
	checkAgainstTimeline(t, c, b, runID, frames)

	// The conversation is free again, through the survivor.
	next := c.Chat(b, map[string]any{"conversationId": conv, "input": "again"})
	if frames, err := next.ReadUntil(10*time.Second, func(f clustertest.Frame) bool { return f.Event == "agent.delta" }); err != nil || len(frames) == 0 {
		t.Fatalf("next run: %v %v", frames, err)
	}
}

// A run started on A is watched and cancelled through B.
func TestCancelThroughAnotherReplica(t *testing.T) {
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Env: upstream(t, 600, 15*time.Millisecond)})
	a, b := c.Start("a"), c.Start("b")
	chat := c.Chat(a, map[string]any{"input": "go on and on"})
	runID := started(t, chat)
	if _, err := chat.ReadUntil(10*time.Second, func(f clustertest.Frame) bool { return f.Event == "agent.delta" }); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	resp, body := c.Do(b, http.MethodPost, "/v1/agent/runs/"+runID+"/cancel", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"cancelled"`) {
		t.Fatalf("cancel on b: %d %s", resp.StatusCode, body)
	}
	frames, err := chat.ReadUntil(5*time.Second, clustertest.IsEnd)
	if err != nil || !clustertest.IsEnd(frames[len(frames)-1]) {
		t.Fatalf("a's stream: %v", err)
	}
	if status, _ := endStatus(t, frames[len(frames)-1]); status != "cancelled" {
		t.Fatalf("end %v", frames[len(frames)-1])
	}
	t.Logf("cancelled through b in %s", time.Since(begin).Round(time.Millisecond))
}

// feishu is a fake Feishu webhook counting the messages it gets.
type feishu struct {
	mu   sync.Mutex
	msgs []string
}

func (f *feishu) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.msgs = append(f.msgs, string(b))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"code":0,"msg":"success","data":{}}`)
}

func (f *feishu) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.msgs)
}

// confirmingCluster's replicas have the given lease (0: clustertest's default).
func confirmingCluster(t *testing.T, lease time.Duration) (*clustertest.Cluster, *feishu) {
	fs := &feishu{}
	srv := httptest.NewServer(fs)
	t.Cleanup(srv.Close)
	c := clustertest.New(t, clustertest.Options{Env: []string{
		"AGENTCHAT_LLM=scripted", "AGENTCHAT_SCRIPTED_TOKEN_DELAY=2ms", "AGENTCHAT_FEISHU_WEBHOOK_URL=" + srv.URL,
	}, LeaseTTL: lease})
	return c, fs
}

// awaiting reads a chat until its run waits for a person, and returns the
// run and confirmation ids.
func awaiting(t *testing.T, s *clustertest.Stream) (runID, confirmationID string) {
	t.Helper()
	runID = started(t, s)
	frames, err := s.ReadUntil(10*time.Second, func(f clustertest.Frame) bool { return f.Event == "tool.awaiting_input" })
	if err != nil || len(frames) == 0 || frames[len(frames)-1].Event != "tool.awaiting_input" {
		t.Fatalf("no tool.awaiting_input: %v %v", frames, err)
	}
	return runID, frames[len(frames)-1].Field("confirmationId")
}

// A confirmation posted to B for a run started (and still streamed) on A:
// the run continues and finishes, the tool runs once.
func TestConfirmationOnAnotherReplica(t *testing.T) {
	t.Parallel()
	c, fs := confirmingCluster(t, 0)
	a, b := c.Start("a"), c.Start("b")
	chat := c.Chat(a, map[string]any{"input": `send a feishu message saying "hello from a"`})
	runID, confirmation := awaiting(t, chat)
	resp, body := c.Do(b, http.MethodPost, "/v1/agent/confirmations/"+confirmation, map[string]any{"decision": "approve"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("decide on b: %d %s", resp.StatusCode, body)
	}
	frames, err := chat.ReadUntil(15*time.Second, clustertest.IsEnd)
	if err != nil || len(frames) == 0 || !clustertest.IsEnd(frames[len(frames)-1]) {
		t.Fatalf("a's stream after the decision: %v %v", frames, err)
	}
	if status, _ := endStatus(t, frames[len(frames)-1]); status != "succeeded" {
		t.Fatalf("end %v", frames[len(frames)-1])
	}
	if n := fs.count(); n != 1 || !strings.Contains(fs.msgs[0], "hello from a") {
		t.Fatalf("feishu got %d messages: %v", n, fs.msgs)
	}
	// Watched from B from the start, the run is the same.
	full := follow(t, c, []*clustertest.Replica{b}, runID, 10*time.Second)
	checkAgainstTimeline(t, c, a, runID, full)
}

// A decision written to the database whose replica died before continuing
// the run (simulated by killing the replica that started the run and writing
// the decision behind the servers' backs): a surviving replica finds it and
// continues the run.
func TestDecisionNobodyApplied(t *testing.T) {
	t.Parallel()
	c, fs := confirmingCluster(t, leaseTTL)
	a, b := c.Start("a"), c.Start("b", survivorLease) // a is killed, b takes over
	chat := c.Chat(a, map[string]any{"input": `send a feishu message saying "late"`})
	runID, confirmation := awaiting(t, chat)
	// The decision below is written behind the servers' backs, which
	// continues only a run recorded as waiting: wait for the status.
	clustertest.Eventually(t, 30*time.Second, "run awaiting input", func() bool {
		_, body := c.Do(b, http.MethodGet, "/v1/agent/runs/"+runID, nil)
		return strings.Contains(string(body), `"status":"awaiting_input"`)
	})
	a.Kill()
	c.Exec(`UPDATE confirmations SET status = 'approved', decided_at = now() WHERE id = $1`, confirmation)
	frames := follow(t, c, []*clustertest.Replica{b}, runID, 15*time.Second)
	if status, _ := endStatus(t, frames[len(frames)-1]); status != "succeeded" {
		t.Fatalf("end %v", frames[len(frames)-1])
	}
	if fs.count() != 1 {
		t.Fatalf("feishu got %d messages", fs.count())
	}
	checkAgainstTimeline(t, c, b, runID, frames)
}

// Redis crashes and comes back empty mid-run: streams on both replicas
// resume without losing or repeating an event (gaps filled from the store),
// and the run completes.
func TestRedisRestartMidRun(t *testing.T) {
	t.Parallel()
	rd := clustertest.StartRedis(t)
	// The run is held after about 100 tokens until Redis is down, so
	// that it is mid-run when Redis goes and publishes into the outage,
	// however slow the machine (a pace alone let it end first).
	env, release := heldUpstream(t, 400, 10*time.Millisecond, 100)
	c := clustertest.New(t, clustertest.Options{Redis: rd.URL, Env: env})
	a, b := c.Start("a"), c.Start("b")
	chat := c.Chat(a, map[string]any{"input": "keep talking"})
	runID := started(t, chat)
	chat.Close()

	// Two clients follow the run, one starting on each replica; Redis
	// goes once both have a stream.
	var wg sync.WaitGroup
	results := make([][]clustertest.Frame, 2)
	errs := make([]error, 2)
	var attached sync.WaitGroup
	for i, order := range [][]*clustertest.Replica{{a, b}, {b, a}} {
		attached.Add(1)
		var once sync.Once
		wg.Go(func() {
			results[i], errs[i] = resume(t, c, order, runID, 60*time.Second, "", func(clustertest.Frame) { once.Do(attached.Done) })
			once.Do(attached.Done) // failed before any frame: the error is reported below
		})
	}
	attached.Wait()
	rd.Kill()
	release()
	// The executor publishes into the outage until it has felt it (a
	// pipeline not sent within its timeout): wait for that, rather than
	// sleeping a length a loaded machine stretches, then bring Redis back.
	// (Bounded, and not fatal before the followers are done: they log.)
	felt := false
	for deadline := time.Now().Add(30 * time.Second); !felt && time.Now().Before(deadline); {
		if felt = strings.Contains(a.Log(), "bus unavailable"); !felt {
			time.Sleep(20 * time.Millisecond)
		}
	}
	rd.Start()
	back := time.Now()
	wg.Wait()
	t.Logf("both followers had the run's end %s after Redis came back", time.Since(back).Round(time.Millisecond))
	if !felt {
		t.Fatalf("the executor did not see Redis go away within 30 s:\n%s", a.Log())
	}

	for i, frames := range results {
		if errs[i] != nil {
			t.Fatalf("follower %d: %v", i, errs[i])
		}
		if status, _ := endStatus(t, frames[len(frames)-1]); status != "succeeded" {
			t.Fatalf("follower %d: end %v", i, frames[len(frames)-1])
		}
		tl := checkAgainstTimeline(t, c, b, runID, frames)
		if n := countEvent(tl, "agent.delta"); n != 400 {
			t.Fatalf("%d deltas in the timeline, want 400", n)
		}
	}
	// The crash did hit the run: its executor could not publish for a while.
	if !strings.Contains(a.Log(), "bus unavailable") || !strings.Contains(a.Log(), "bus available again") {
		t.Fatalf("the executor never saw Redis go away:\n%s", a.Log())
	}

	// Replaying a finished run never depends on Redis: with Redis gone, the
	// whole run still comes from the log, on either replica; a live stream
	// (of the conversation) is refused with 503 bus_unavailable.
	//
	// The bound is generous (a loaded CI box once stopped this replay at
	// 341 of ~400 frames for 5 s, not found since): how long each replay
	// took is logged, and a failure says where the stream stopped and what
	// the replica logged of the request.
	rd.Kill()
	for _, r := range []*clustertest.Replica{a, b} {
		begin := time.Now()
		s := c.Attach(r, runID, 0)
		frames, err := s.ReadUntil(30*time.Second, clustertest.IsEnd)
		if err != nil {
			last := int64(0)
			if len(frames) > 0 {
				last = frames[len(frames)-1].Seq
			}
			t.Fatalf("replaying the ended run on %s with Redis down: %v; the last frame had seq %d; the replica logged:\n%s",
				r.Name, err, last, r.Grep(runID))
		}
		t.Logf("replayed %d frames on %s with Redis down in %s", len(frames), r.Name, time.Since(begin).Round(time.Millisecond))
		checkAgainstTimeline(t, c, r, runID, frames)
	}
	conv := results[0][0].Field("conversationId")
	begin := time.Now()
	resp, body := c.Do(b, http.MethodGet, "/v1/conversations/"+conv+"/events", nil)
	t.Logf("refused in %s", time.Since(begin).Round(time.Millisecond))
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "bus_unavailable") {
		t.Fatalf("a live stream with Redis down: %d %s", resp.StatusCode, body)
	}
}

// PostgreSQL goes away: requests answer 503 store_unavailable with a clear
// message, nothing is half-written, no process dies, /readyz says not ready;
// when it returns, work resumes. A replica cut off mid-run stops acting for
// its run, and the replica that still reaches the database ends it.
//
// The replicas have the default lease, not the short one: the blip of part
// 3 must cost nothing, so it must be well inside a's lease however long a
// loaded machine stalls a's renewal after it (with 2 s, a stall of about a
// second lapsed it in CI). Part 4 waits for that lease to lapse.
func TestPostgresUnavailable(t *testing.T) {
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Env: upstream(t, 300, 10*time.Millisecond)})
	proxyA, urlA := c.PostgresProxy()
	proxyB, urlB := c.PostgresProxy()
	a := c.Start("a", "AGENTCHAT_STORE="+urlA)
	b := c.Start("b", "AGENTCHAT_STORE="+urlB)

	// 1. The database is gone for everyone.
	proxyA.Cut()
	proxyB.Cut()
	for _, r := range []*clustertest.Replica{a, b} {
		for _, req := range []struct {
			method, path string
			body         any
		}{
			{http.MethodPost, "/v1/agent/chat", map[string]any{"input": "hello"}},
			{http.MethodGet, "/v1/conversations", nil},
			{http.MethodPost, "/v1/conversations", map[string]any{"title": "t"}},
		} {
			resp, raw := c.Do(r, req.method, req.path, req.body)
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			json.Unmarshal(raw, &e)
			if resp.StatusCode != http.StatusServiceUnavailable || e.Error.Code != "store_unavailable" || e.Error.Message == "" {
				t.Fatalf("%s %s on %s with the database down: %d %s", req.method, req.path, r.Name, resp.StatusCode, raw)
			}
		}
		if resp, raw := c.Do(r, http.MethodGet, "/readyz", nil); resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("readyz on %s: %d %s", r.Name, resp.StatusCode, raw)
		}
		if resp, _ := c.Do(r, http.MethodGet, "/healthz", nil); resp.StatusCode != http.StatusOK || !r.Alive() {
			t.Fatalf("%s is not alive", r.Name)
		}
	}
	// 2. It returns: ready again, and the refused requests left nothing behind.
	proxyA.Restore()
	proxyB.Restore()
	for _, r := range []*clustertest.Replica{a, b} {
		clustertest.Eventually(t, 30*time.Second, r.Name+" ready", func() bool {
			resp, _ := c.Do(r, http.MethodGet, "/readyz", nil)
			return resp.StatusCode == http.StatusOK
		})
	}
	if _, raw := c.Do(b, http.MethodGet, "/v1/conversations", nil); strings.Contains(string(raw), `"id"`) {
		t.Fatalf("refused requests left conversations: %s", raw)
	}
	chatAfterOutage(t, c, a)

	// 3. A short blip on the executing replica (well inside the lease) costs
	// nothing. Mid-run, the database goes away until a has felt it (its
	// connections reset, a new one refused) and comes back: waiting for
	// that rather than sleeping keeps the blip well inside the lease on a
	// loaded machine, where a 400ms sleep could stretch past the margin
	// between heartbeats and fence a.
	blipThrough(t, c, a, b, proxyA)

	// 4. The executing replica loses the database for longer than its lease:
	// it stops, B ends the run after what A published, and nothing A held
	// back lands after that end when its database returns. (Counted from
	// here: a blip above may have fenced a once already.)
	const dropped, stopped, took = "event log: dropped events of executions that stopped acting", "stopped executing this replica's runs", "ending a run whose executor stopped"
	drops, stops, takes := strings.Count(a.Log(), dropped), strings.Count(a.Log(), stopped), strings.Count(b.Log(), took)
	chat := c.Chat(a, map[string]any{"input": "cut off"})
	runID := started(t, chat)
	deltas(t, chat, 20)
	chat.Close()
	proxyA.Cut()
	// b ends the run once a's lease has lapsed and its sweep has seen it:
	// about LeaseTTL. The bound leaves room for a loaded machine (CI's
	// packages side by side on two cores stalled a takeover past
	// LeaseTTL+10s once); the log says how long it took.
	cut := time.Now()
	frames := follow(t, c, []*clustertest.Replica{b}, runID, c.LeaseTTL+30*time.Second)
	t.Logf("b ended the cut-off run %s after the cut (lease %s)", time.Since(cut).Round(time.Millisecond), c.LeaseTTL)
	if status, code := endStatus(t, frames[len(frames)-1]); status != "failed" || code != "executor_lost" {
		t.Fatalf("cut-off run: %v", frames[len(frames)-1])
	}
	proxyA.Restore()
	clustertest.Eventually(t, 30*time.Second, "a ready", func() bool {
		resp, _ := c.Do(a, http.MethodGet, "/readyz", nil)
		return resp.StatusCode == http.StatusOK
	})
	// a's event log held the events a emitted after the cut: it drops them
	// (their execution was fenced), and none lands after b's end.
	clustertest.Eventually(t, 30*time.Second, "a drops its held events", func() bool {
		return strings.Count(a.Log(), dropped) > drops
	})
	checkAgainstTimeline(t, c, a, runID, frames)
	if strings.Count(a.Log(), stopped) <= stops || strings.Count(b.Log(), took) <= takes {
		t.Fatal("a did not fence itself, or b did not take the run over")
	}
	if !a.Alive() || !b.Alive() {
		t.Fatal("a replica died")
	}
}

// chatAfterOutage checks that work resumes on r once the database is back:
// a chat there succeeds. The outage reset r's heartbeat connection, so its
// next renewal fails and is retried on a fresh one; on a machine loaded
// enough to stall every process for longer than the margin of r's lease,
// r may fence its term meanwhile. That is the fencing working, not work failing to resume:
// such a run must end executor_lost (never hang, never succeed twice), and
// the next chat, on r's new term, must succeed.
func chatAfterOutage(t *testing.T, c *clustertest.Cluster, r *clustertest.Replica) {
	t.Helper()
	for try := 1; ; try++ {
		terms := strings.Count(r.Log(), "replica term began")
		chat := c.Chat(r, map[string]any{"input": "after the outage"})
		frames, err := chat.ReadUntil(20*time.Second, clustertest.IsEnd)
		chat.Close()
		if err != nil || len(frames) == 0 {
			t.Fatal(err)
		}
		status, code := endStatus(t, frames[len(frames)-1])
		if status == "succeeded" {
			return
		}
		fenced := code == "executor_lost" && strings.Contains(r.Log(), "its heartbeat could not be renewed in time")
		if !fenced || try == 3 {
			t.Fatalf("run after the outage (try %d): %v", try, frames[len(frames)-1])
		}
		t.Logf("try %d: %s fenced its term after the outage (a stalled machine); the run ended %s; trying again on its next term", try, r.Name, code)
		clustertest.Eventually(t, 30*time.Second, r.Name+"'s next term", func() bool {
			return strings.Count(r.Log(), "replica term began") > terms
		})
	}
}

// blipThrough runs a chat on a through a blip of its database (proxy cut
// until a felt it, then restored) and checks that it costs nothing: the run
// succeeds with every delta, as the timeline says. The blip resets a's
// heartbeat connection too; on a machine loaded enough that a's new
// connection and renewal take longer than its lease's margin (seen with
// eight busy loops on two cores, where a renewal after the blip did not
// finish in 4 s), a fences its term: that is the fencing working, not the
// blip costing a run, so such a run must end executor_lost with the stream
// equal to the timeline, and the blip is tried again on a's next term.
func blipThrough(t *testing.T, c *clustertest.Cluster, a, b *clustertest.Replica, proxy *clustertest.Proxy) {
	t.Helper()
	for try := 1; ; try++ {
		terms := strings.Count(a.Log(), "replica term began")
		fences := strings.Count(a.Log(), "its heartbeat could not be renewed in time")
		chat := c.Chat(a, map[string]any{"input": "through a blip"})
		runID := started(t, chat)
		deltas(t, chat, 20)
		chat.Close()
		proxy.Cut()
		proxy.AwaitRefused(10 * time.Second)
		proxy.Restore()
		frames := follow(t, c, []*clustertest.Replica{b, a}, runID, c.LeaseTTL+20*time.Second)
		tl := checkAgainstTimeline(t, c, b, runID, frames)
		status, code := endStatus(t, frames[len(frames)-1])
		if status == "succeeded" {
			if n := countEvent(tl, "agent.delta"); n != 300 {
				t.Fatalf("%d deltas after a blip, want 300", n)
			}
			return
		}
		fenced := code == "executor_lost" && strings.Count(a.Log(), "its heartbeat could not be renewed in time") > fences
		if !fenced || try == 3 {
			t.Fatalf("run through a blip (try %d): %v", try, frames[len(frames)-1])
		}
		t.Logf("try %d: a fenced its term after the blip (a stalled machine); the run ended %s; trying again on its next term", try, code)
		clustertest.Eventually(t, 30*time.Second, "a's next term", func() bool {
			return strings.Count(a.Log(), "replica term began") > terms
		})
	}
}

// Reconnecting with every possible Last-Event-ID through a different
// replica gives exactly the missing events; so does hopping between replicas
// while the run is live.
func TestResumeFromEveryPosition(t *testing.T) {
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Env: upstream(t, 40, 10*time.Millisecond)})
	a, b, third := c.Start("a"), c.Start("b"), c.Start("c")

	chat := c.Chat(a, map[string]any{"input": "short answer"})
	all, err := chat.ReadUntil(20*time.Second, clustertest.IsEnd)
	if err != nil {
		t.Fatal(err)
	}
	runID := chat.Header.Get("X-Run-ID")
	checkAgainstTimeline(t, c, b, runID, all)
	lastSeq := all[len(all)-1].Seq
	for after := int64(0); after <= lastSeq; after++ {
		r := []*clustertest.Replica{b, third}[after%2]
		s := c.Attach(r, runID, after)
		got, err := s.ReadUntil(5*time.Second, clustertest.IsEnd)
		s.Close()
		if err != nil {
			t.Fatalf("after %d on %s: %v", after, r.Name, err)
		}
		var want []clustertest.Frame
		for _, f := range all {
			if f.Seq > after {
				want = append(want, f)
			}
		}
		if after == lastSeq {
			want = nil // nothing is missing; the stream just ends
		}
		if ok, diff := clustertest.Equal(got, want); !ok {
			t.Fatalf("after %d on %s: %s", after, r.Name, diff)
		}
	}

	// Live: a client drops its connection every few events and resumes on the
	// next replica.
	chat = c.Chat(a, map[string]any{"conversationId": chat.Header.Get("X-Conversation-ID"), "input": "again, longer"})
	runID = started(t, chat)
	chat.Close()
	replicas := []*clustertest.Replica{b, third, a}
	var frames []clustertest.Frame
	last := "" // the id of the last frame seen
	for i := 0; len(frames) == 0 || !clustertest.IsEnd(frames[len(frames)-1]); i++ {
		if i > 500 {
			t.Fatalf("no end after %d reconnections", i)
		}
		s, status, msg := c.TryResume(replicas[i%3], runID, last)
		if s == nil && status == 0 {
			// The connection failed (a loaded machine): a client tries
			// again, from the same position.
			t.Logf("resume after %q: %s; retrying", last, msg)
			continue
		}
		if s == nil {
			t.Fatalf("resume after %q: %d %s", last, status, msg)
		}
		n := 0
		got, err := s.ReadUntil(10*time.Second, func(f clustertest.Frame) bool { n++; return n == 3 || clustertest.IsEnd(f) })
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range got {
			frames = append(frames, f)
			last = f.ID
		}
	}
	checkAgainstTimeline(t, c, a, runID, frames)
	t.Logf("resumed %d times across 3 replicas", len(frames)/3)
}
