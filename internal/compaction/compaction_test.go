package compaction

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

func TestApply(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 16, 9, 0, 0, 0, time.UTC)
	var msgs []chat.Message
	for i := range 5 {
		msgs = append(msgs, chat.Message{ID: fmt.Sprint("m", i), Role: chat.RoleUser, Content: fmt.Sprint(i), CreatedAt: t0.Add(time.Duration(i) * time.Second)})
	}
	if got := Apply(msgs, store.Compaction{}); len(got) != 5 {
		t.Fatalf("no compaction: %d", len(got))
	}
	k := store.Compaction{ID: "k", Summary: "S", ThroughID: "m2", ThroughAt: msgs[2].CreatedAt}
	got := Apply(msgs, k)
	if len(got) != 3 || got[0].Role != chat.RoleSystem || !strings.HasSuffix(got[0].Content, "\nS") || got[1].ID != "m3" {
		t.Fatalf("applied %+v", got)
	}
	// The boundary message itself is gone (regenerated away): by position.
	got = Apply(append(msgs[:2:2], msgs[3:]...), k)
	if len(got) != 3 || got[1].ID != "m3" {
		t.Fatalf("without the boundary %+v", got)
	}
}
