package groupcommit_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentchat/agentchat/internal/store/groupcommit"
)

type write struct {
	groupcommit.Turn
	sent atomic.Int32 // how many groups sent it
}

func TestALoneWriteLeadsAtOnce(t *testing.T) {
	var q groupcommit.Queue[*write]
	for range 3 {
		w := &write{}
		if !q.Join(w) {
			t.Fatal("a write that finds no group in progress did not lead")
		}
		if q.First() != w {
			t.Fatal("the leader's own write is not the queue's first")
		}
		group := q.Take(10)
		if len(group) != 1 || group[0] != w {
			t.Fatalf("took %d writes, want the leader's own", len(group))
		}
		q.Done(group)
	}
}

// Many callers at once: every write is sent by exactly one group, before
// its caller's wait ends; one leader at a time; every caller leads at most
// once (Join returns once).
func TestEveryWriteIsSentOnceByOneLeaderAtATime(t *testing.T) {
	var q groupcommit.Queue[*write]
	const callers, max = 200, 7
	var leaders, groups atomic.Int32
	ws := make([]*write, callers)
	var wg sync.WaitGroup
	for i := range ws {
		ws[i] = &write{}
		wg.Go(func() {
			w := ws[i]
			if q.Join(w) {
				if leaders.Add(1) != 1 {
					t.Error("two leaders at once")
				}
				if q.First() != w {
					t.Error("the leader's own write is not the queue's first")
				}
				group := q.Take(max)
				if len(group) == 0 || len(group) > max {
					t.Errorf("a group of %d writes (max %d)", len(group), max)
				}
				for _, g := range group {
					g.sent.Add(1)
				}
				groups.Add(1)
				leaders.Add(-1)
				q.Done(group)
			}
			if n := w.sent.Load(); n != 1 {
				t.Errorf("a caller's wait ended with its write sent %d times", n)
			}
		})
	}
	wg.Wait()
	for i, w := range ws {
		if n := w.sent.Load(); n != 1 {
			t.Errorf("write %d sent %d times", i, n)
		}
	}
	if g := groups.Load(); g < callers/max {
		t.Errorf("%d groups for %d writes of at most %d", g, callers, max)
	}
}
