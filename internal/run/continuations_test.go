package run

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
)

func TestContinuations(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var c continuations
	if _, ok := c.get("none"); ok {
		t.Fatal("found in an empty map")
	}
	c.put("a", continuation{clientRunID: "run-a", status: "approved", at: now})
	c.put("b", continuation{clientRunID: "run-b", status: "rejected", at: now.Add(-2 * continuationTTL)})
	c.put("c", continuation{clientRunID: "run-c", status: "approved", at: now.Add(-continuationTTL / 2)})
	c.put("a", continuation{clientRunID: "run-a2", status: "approved", at: now}) // a later decision replaces
	if v, ok := c.get("a"); !ok || v.clientRunID != "run-a2" {
		t.Fatalf("get a: %+v %v", v, ok)
	}
	c.drop("a")
	if _, ok := c.get("a"); ok {
		t.Fatal("a dropped continuation is still there")
	}
	c.drop("missing")
	if n := c.expire(now.Add(-continuationTTL)); n != 1 || c.len() != 1 {
		t.Fatalf("expired %d, %d left", n, c.len())
	}
	if v, ok := c.get("c"); !ok || v.clientRunID != "run-c" {
		t.Fatalf("a continuation younger than the TTL: %+v %v", v, ok)
	}
}

// A continuation no resume takes (its run was cancelled, say) is expired by
// the sweep loop, whether or not another decision comes.
func TestSweepExpiresContinuations(t *testing.T) {
	t.Parallel()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "agentchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := membus.New(0)
	t.Cleanup(func() { b.Close() })
	s := New(Config{Store: st, Bus: b, Sole: true, SweepInterval: time.Hour})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	now := time.Now()
	s.continuations.put("old", continuation{clientRunID: "r1", status: "approved", at: now.Add(-continuationTTL - time.Minute)})
	s.continuations.put("new", continuation{clientRunID: "r2", status: "approved", at: now.Add(-time.Minute)})
	s.sweep(now)
	if _, ok := s.continuations.get("old"); ok {
		t.Fatal("the sweep kept a continuation past its TTL")
	}
	if _, ok := s.continuations.get("new"); !ok {
		t.Fatal("the sweep dropped a fresh continuation")
	}
}
