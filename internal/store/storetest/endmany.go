package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// testConcurrentRunEnds: the writes of many runs' ends at once (which a
// backend may commit together, as it may starts) each succeed or fail
// alone. For every run two enders race with a compare-and-set from
// running: exactly one wins, the other answers ErrConflict; the run's
// assistant message is stored; the claim of its conversation's next queued
// input finds none. Among them, a message into another user's conversation
// answers ErrNotFound and a message reusing a stored message's id answers
// ErrConflict (the database refuses it), and neither fails a neighbour nor
// writes anything.
func testConcurrentRunEnds(t *testing.T, s store.Store) {
	const runs = 24
	type chatRun struct {
		conv chat.Conversation
		run  chat.Run
		user chat.Message
	}
	all := make([]chatRun, runs)
	for i := range all {
		st := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{
			NewConversation: &chat.Conversation{Title: fmt.Sprint("ending ", i)},
			Run:             chat.Run{Input: "hi", Status: chat.RunRunning},
			Message:         chat.Message{Role: chat.RoleUser, Content: "hi"},
		}))
		all[i] = chatRun{st.Conversation, st.Run, st.Message}
	}
	var mu sync.Mutex
	wins := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
	}
	for i, c := range all {
		for range 2 {
			wg.Go(func() {
				<-start
				end := time.Now()
				_, err := s.UpdateRun(ctx(t), "acme", c.run.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &end,
					Usage: &event.Usage{InputTokens: 1, OutputTokens: 2}, From: []string{chat.RunRunning}})
				switch {
				case err == nil:
					mu.Lock()
					wins[c.run.ID]++
					mu.Unlock()
				case !errors.Is(err, store.ErrConflict):
					fail("ending run %s: %v, want nil or ErrConflict", c.run.ID, err)
				}
			})
		}
		wg.Go(func() {
			<-start
			if _, err := s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: c.conv.ID, RunID: c.run.ID, Role: chat.RoleAssistant, Content: "answer"}); err != nil {
				fail("the answer of run %s: %v", c.run.ID, err)
			}
			if _, err := s.TakeQueuedInput(ctx(t), "acme", c.conv.ID); !errors.Is(err, store.ErrNotFound) {
				fail("taking from an empty queue of %s: %v, want ErrNotFound", c.conv.ID, err)
			}
		})
		switch i % 6 {
		case 0:
			wg.Go(func() {
				<-start
				_, err := s.AppendMessage(ctx(t), bob, chat.Message{ConversationID: c.conv.ID, Role: chat.RoleUser, Content: "intruder"})
				if !errors.Is(err, store.ErrNotFound) {
					fail("a message into another user's conversation: %v, want ErrNotFound", err)
				}
			})
		case 1:
			wg.Go(func() {
				<-start
				_, err := s.AppendMessage(ctx(t), alice, chat.Message{ID: c.user.ID, ConversationID: c.conv.ID, Role: chat.RoleUser, Content: "again"})
				if !errors.Is(err, store.ErrConflict) {
					fail("a message reusing id %s: %v, want ErrConflict", c.user.ID, err)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, c := range all {
		if wins[c.run.ID] != 1 {
			t.Fatalf("run %s ended %d times, want once", c.run.ID, wins[c.run.ID])
		}
		if r := must[chat.Run](t)(s.GetRun(ctx(t), alice, c.run.ID)); r.Status != chat.RunSucceeded || r.EndedAt == nil {
			t.Fatalf("stored run %+v", r)
		}
		msgs, _, err := s.ListMessages(ctx(t), alice, c.conv.ID, store.MessageFilter{}, store.Page{Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 2 || msgs[0].ID != c.user.ID || msgs[0].Content != "hi" || msgs[1].Role != chat.RoleAssistant || msgs[1].Content != "answer" {
			t.Fatalf("messages of %s: %+v, want the user's and the answer", c.conv.ID, msgs)
		}
	}
}
