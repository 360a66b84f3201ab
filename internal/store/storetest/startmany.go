package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// testConcurrentStarts: starts from many callers at once (which a backend
// may commit together) each succeed or fail alone. Into each of a few busy
// conversations exactly one start wins and the others answer *BusyError
// naming it, writing nothing; every start into a new conversation succeeds
// with its conversation, run and message stored; a start into a missing
// conversation fails with ErrNotFound without failing its neighbours.
func testConcurrentStarts(t *testing.T, s store.Store) {
	const convs, perConv, fresh, missing = 4, 8, 40, 4
	existing := make([]chat.Conversation, convs)
	for i := range existing {
		existing[i] = must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{Title: fmt.Sprint("busy ", i)}))
	}
	type result struct {
		conv string // the conversation asked for ("" for a new one)
		got  store.RunStarted
		err  error
	}
	var mu sync.Mutex
	var results []result
	var wg sync.WaitGroup
	start := make(chan struct{})
	launch := func(conv string, fresh bool) {
		wg.Go(func() {
			in := store.RunStart{Run: chat.Run{ConversationID: conv, Input: "hi", Status: chat.RunRunning},
				Message: chat.Message{Role: chat.RoleUser, Content: "hi"}, ReserveSeqs: 10}
			if fresh {
				in.NewConversation = &chat.Conversation{Title: "fresh"}
			}
			<-start
			got, err := s.StartRun(ctx(t), alice, &in)
			mu.Lock()
			results = append(results, result{conv, got, err})
			mu.Unlock()
		})
	}
	for _, c := range existing {
		for range perConv {
			launch(c.ID, false)
		}
	}
	for range fresh {
		launch("", true)
	}
	for i := range missing {
		launch(fmt.Sprint("missing-", i), false)
	}
	close(start)
	wg.Wait()

	winners := map[string]string{} // conversation → its run
	var busy []result
	for _, r := range results {
		switch {
		case r.conv == "" && r.err != nil:
			t.Fatalf("a start into a new conversation failed: %v", r.err)
		case r.err == nil:
			if r.conv != "" {
				if w, dup := winners[r.conv]; dup {
					t.Fatalf("two runs started in %s: %s and %s", r.conv, w, r.got.Run.ID)
				}
				winners[r.conv] = r.got.Run.ID
			}
			msgs, _, err := s.ListMessages(ctx(t), alice, r.got.Conversation.ID, store.MessageFilter{}, store.Page{Limit: 20})
			if err != nil || len(msgs) != 1 || msgs[0].ID != r.got.Message.ID || msgs[0].RunID != r.got.Run.ID {
				t.Fatalf("messages of a started run %+v: %+v (%v)", r.got.Run, msgs, err)
			}
			if run := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.got.Run.ID)); run.ConversationID != r.got.Conversation.ID || run.SeqReserved != 10 {
				t.Fatalf("stored run %+v", run)
			}
		case strings.HasPrefix(r.conv, "missing-"):
			wantErr(t, r.err, store.ErrNotFound)
		default:
			var b *store.BusyError
			if !errors.As(r.err, &b) {
				t.Fatalf("a losing start into %s: %v, want *store.BusyError", r.conv, r.err)
			}
			busy = append(busy, r)
		}
	}
	if len(winners) != convs || len(busy) != convs*(perConv-1) {
		t.Fatalf("%d winners, %d busy: want %d and %d", len(winners), len(busy), convs, convs*(perConv-1))
	}
	for _, r := range busy {
		var b *store.BusyError
		errors.As(r.err, &b)
		if b.ActiveRunID != winners[r.conv] {
			t.Fatalf("busy names %s, the winner in %s is %s", b.ActiveRunID, r.conv, winners[r.conv])
		}
	}
	for _, c := range existing {
		msgs, _, err := s.ListMessages(ctx(t), alice, c.ID, store.MessageFilter{}, store.Page{Limit: 20})
		if err != nil || len(msgs) != 1 {
			t.Fatalf("conversation %s holds %d messages (%v): the losers wrote some", c.ID, len(msgs), err)
		}
	}
}
