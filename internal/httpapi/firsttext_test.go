package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/scripted"
	"github.com/agentchat/agentchat/internal/retrieval"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/usage"
)

// The first text of a new conversation does not wait for its start to be
// written (issue 25): the model is called while the conversation, the run
// and the user message are stored, and what the run emits is published
// once they are, in seq order.

// watchedModel is the scripted model, with its calls observed: called
// closes at the first call, answering once the first chunk of that call
// has been handed to the engine (which then emits its first text).
type watchedModel struct {
	llm.Model
	mu        sync.Mutex
	calls     int
	ctx       context.Context // the first call's
	called    chan struct{}
	answering chan struct{}
	once      sync.Once
}

func newWatchedModel() *watchedModel {
	return &watchedModel{Model: scripted.New(scripted.Config{TokenDelay: -1}), called: make(chan struct{}), answering: make(chan struct{})}
}

func (m *watchedModel) Stream(ctx context.Context, r llm.Request) (llm.Stream, error) {
	m.mu.Lock()
	m.calls++
	if m.calls == 1 {
		m.ctx = ctx
		close(m.called)
	}
	m.mu.Unlock()
	s, err := m.Model.Stream(ctx, r)
	if err != nil {
		return nil, err
	}
	return &watchedStream{Stream: s, m: m}, nil
}

// state is the number of calls and the first call's context.
func (m *watchedModel) state() (int, context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls, m.ctx
}

type watchedStream struct {
	llm.Stream
	m *watchedModel
}

func (s *watchedStream) Next() bool {
	ok := s.Stream.Next()
	if ok {
		s.m.once.Do(func() { close(s.m.answering) })
	}
	return ok
}

// startHook is a store whose StartRun calls before first: its error fails
// the start, unwritten.
type startHook struct {
	store.Store
	before func(in store.RunStart) error
}

func (h startHook) StartRun(ctx context.Context, sc chat.Scope, in *store.RunStart) (store.RunStarted, error) {
	if err := h.before(*in); err != nil {
		return store.RunStarted{}, err
	}
	return h.Store.StartRun(ctx, sc, in)
}

// answered waits until m answers its first call. The bound only ends a
// failing test (the model was never called): nothing is timed.
func (m *watchedModel) answered() error {
	select {
	case <-m.answering:
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("the model was not called while the start was written")
	}
}

// TestFirstTextModelIsCalledWhileTheStartIsWritten holds the start until
// the model answers: the chat still streams its whole run, the events in
// seq order from 1 with the announcements first, as the timeline has them.
func TestFirstTextModelIsCalledWhileTheStartIsWritten(t *testing.T) {
	t.Parallel()
	backends(t, testModelCalledWhileTheStartIsWritten)
}

func testModelCalledWhileTheStartIsWritten(t *testing.T, o options) {
	m := newWatchedModel()
	o.model, o.wrapStore = m, func(st store.Store) store.Store {
		return startHook{Store: st, before: func(store.RunStart) error { return m.answered() }}
	}
	e := setup(t, o)
	frames := e.chat(alice, map[string]any{"input": "hello"})
	if got := names(frames); len(got) < 4 || got[0] != "conversation.created" || got[1] != "agent.start" || got[len(got)-1] != "agent.end" {
		t.Fatalf("frames %v", got)
	}
	if status := last(frames).Data["status"]; status != "succeeded" {
		t.Fatalf("end %v", last(frames).Data)
	}
	deltas, prev := 0, 0 // native frames skip the step events: ids rise, from 1
	for i, f := range frames {
		id, err := strconv.Atoi(f.ID)
		if err != nil || id <= prev || (i == 0 && id != 1) {
			t.Fatalf("frame %d (%s) has id %q after %d: %v", i, f.Event, f.ID, prev, names(frames))
		}
		prev = id
		if f.Event == "agent.delta" {
			deltas++
		}
	}
	if deltas == 0 {
		t.Fatalf("no text: %v", names(frames))
	}
	runID, _ := frames[1].Data["runId"].(string)
	tl := e.call(req{method: "GET", path: "/v1/agent/runs/" + runID + "/timeline", token: alice}, http.StatusOK)
	evs, _ := tl["events"].([]any)
	if len(evs) == 0 {
		t.Fatalf("timeline %v", tl)
	}
	prevSeq := 0.0
	for i, ev := range evs {
		seq, _ := ev.(map[string]any)["seq"].(float64)
		if seq <= prevSeq || (i == 0 && seq != 1) {
			t.Fatalf("timeline event %d has seq %v after %v: %v", i, seq, prevSeq, ev)
		}
		prevSeq = seq
	}
	if len(evs) != len(frames) {
		t.Fatalf("the timeline has %d events, the stream %d frames", len(evs), len(frames))
	}
	if n, _ := m.state(); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
}

// TestFirstTextFailedStartCancelsTheModelCall fails the start after the
// model answered: the client gets the start's error as a JSON error, the
// model call is cancelled, and nothing of the run exists; the next chat
// runs as usual.
func TestFirstTextFailedStartCancelsTheModelCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"too many runs", fmt.Errorf("%w: tenant has 1", store.ErrTooManyRuns), http.StatusTooManyRequests, errcode.TooManyRuns},
		{"store failure", errors.New("disk I/O error"), http.StatusInternalServerError, errcode.InternalError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			backends(t, func(t *testing.T, o options) {
				m := newWatchedModel()
				var mu sync.Mutex
				var failed []store.RunStart // the starts failed, as asked
				o.model, o.wrapStore = m, func(st store.Store) store.Store {
					return startHook{Store: st, before: func(in store.RunStart) error {
						mu.Lock()
						defer mu.Unlock()
						if len(failed) > 0 {
							return nil
						}
						if err := m.answered(); err != nil {
							return err
						}
						failed = append(failed, in)
						return tc.err
					}}
				}
				e := setup(t, o)
				body := e.call(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hello"}}, tc.status)
				if ae, _ := body["error"].(map[string]any); ae["code"] != tc.code || ae["message"] == "" {
					t.Fatalf("error %v, want code %s", body, tc.code)
				}
				if len(failed) != 1 || failed[0].NewConversation == nil {
					t.Fatalf("failed starts %+v", failed)
				}
				n, ctx := m.state()
				if n != 1 || ctx.Err() == nil {
					t.Fatalf("%d model calls, the first one's context %v: want one, cancelled", n, ctx.Err())
				}
				in := failed[0]
				e.call(req{method: "GET", path: "/v1/conversations/" + in.NewConversation.ID, token: alice}, http.StatusNotFound)
				e.call(req{method: "GET", path: "/v1/agent/runs/" + in.Run.ID, token: alice}, http.StatusNotFound)
				if list, _ := e.call(req{method: "GET", path: "/v1/conversations", token: alice}, http.StatusOK)["conversations"].([]any); len(list) != 0 {
					t.Fatalf("conversations after a failed start: %v", list)
				}
				if frames := e.chat(alice, map[string]any{"input": "again"}); last(frames).Data["status"] != "succeeded" {
					t.Fatalf("the next chat %v", names(frames))
				}
			})
		})
	}
}

// TestFirstTextQuotaRefusalCallsNoModel: a start that a quota may refuse
// checks it before any model call, so a refused start calls none.
func TestFirstTextQuotaRefusalCallsNoModel(t *testing.T) {
	t.Parallel()
	m := newWatchedModel()
	e := setup(t, options{model: m, limits: usage.Policy{RunsPerMinute: 1}})
	if frames := e.chat(alice, map[string]any{"input": "hello"}); last(frames).Data["status"] != "succeeded" {
		t.Fatalf("the first chat %v", names(frames))
	}
	body := e.call(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "again"}}, http.StatusTooManyRequests)
	if ae, _ := body["error"].(map[string]any); ae["code"] != errcode.RateLimited {
		t.Fatalf("error %v", body)
	}
	if n, _ := m.state(); n != 1 {
		t.Fatalf("%d model calls, want 1: the refused start called the model", n)
	}
}

// TestFirstTextRemembersTheFirstMessage: with memory on, the first message
// of a new conversation is remembered although its run began, and called
// the model, before the message was stored (the start is held until then):
// the memory entry is written once the conversation is.
func TestFirstTextRemembersTheFirstMessage(t *testing.T) {
	t.Parallel()
	backends(t, testRemembersTheFirstMessage)
}

func testRemembersTheFirstMessage(t *testing.T, o options) {
	m := newWatchedModel()
	o.memory, o.model, o.wrapStore = true, m, func(st store.Store) store.Store {
		return startHook{Store: st, before: func(store.RunStart) error { return m.answered() }}
	}
	e := setup(t, o)
	const input = "zebrafinch quasar lighthouse"
	frames := e.chat(alice, map[string]any{"input": input})
	if last(frames).Data["status"] != "succeeded" {
		t.Fatalf("chat %v", names(frames))
	}
	found, err := e.store.SearchMemory(t.Context(), chat.Scope{Tenant: "acme", User: "alice"}, retrieval.QueryTerms("zebrafinch"), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range found {
		if p.Content == input {
			return
		}
	}
	t.Fatalf("the first message is not remembered: %+v", found)
}
