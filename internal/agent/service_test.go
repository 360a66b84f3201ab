package agent

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/llm/scripted"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
	"github.com/agentchat/agentchat/internal/store/sqlitestore/sqlitetest"
	"github.com/agentchat/agentchat/internal/tool"
	"github.com/agentchat/agentchat/internal/tool/builtin"
)

var (
	admin  = chat.Scope{Tenant: "acme", User: "root", Role: chat.Admin}
	member = chat.Scope{Tenant: "acme", User: "alice"}
	other  = chat.Scope{Tenant: "evil", User: "mallory", Role: chat.Admin}
)

// clock is a settable time for the cache's expiry.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	st     store.Store
	bus    *membus.Bus
	models *Models
	tools  *tool.Registry
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitetest.Path(t)) // migrated and empty
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg, err := tool.NewRegistry(tool.RegistryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := builtin.Register(reg, builtin.Config{}); err != nil {
		t.Fatal(err)
	}
	m, err := NewModels(ModelsConfig{Default: scripted.New(scripted.Config{TokenDelay: -1}), DefaultInfo: ModelInfo{Provider: ProviderScripted}})
	if err != nil {
		t.Fatal(err)
	}
	b := membus.New(0)
	t.Cleanup(func() { b.Close() })
	return fixture{st: st, bus: b, models: m, tools: reg}
}

func (f fixture) service(t *testing.T, now func() time.Time) *Service {
	t.Helper()
	s := New(Config{Store: f.st, Bus: f.bus, Models: f.models, Tools: f.tools, Engines: []string{"local", "chain"}, Now: now})
	t.Cleanup(s.Close)
	return s
}

// heard returns a channel told of each control message s applies; set it
// before s hears anything.
func heard(s *Service) <-chan bus.Control {
	ch := make(chan bus.Control, 64)
	s.heard = func(c bus.Control) { ch <- c }
	return ch
}

func create(t *testing.T, s *Service, body string) Agent {
	t.Helper()
	sp, off, err := DecodeSpec([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Create(context.Background(), admin, sp, off)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Only admins change agents and settings; members read and use them.
func TestMembersCannotChangeAgents(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.service(t, nil)
	ctx := context.Background()
	a := create(t, s, `{"name":"Support"}`)
	sp, off, _ := DecodeSpec([]byte(`{"name":"Mine"}`))
	if _, err := s.Create(ctx, member, sp, off); !errors.Is(err, ErrForbidden) {
		t.Errorf("create by a member: %v", err)
	}
	if _, err := s.Update(ctx, member, a.ID, Update{Patch: []byte(`{"name":"x"}`)}); !errors.Is(err, ErrForbidden) {
		t.Errorf("update by a member: %v", err)
	}
	if _, err := s.Publish(ctx, member, a.ID, 1); !errors.Is(err, ErrForbidden) {
		t.Errorf("publish by a member: %v", err)
	}
	if _, err := s.Archive(ctx, member, a.ID); !errors.Is(err, ErrForbidden) {
		t.Errorf("archive by a member: %v", err)
	}
	if _, err := s.SetDefault(ctx, member, a.ID); !errors.Is(err, ErrForbidden) {
		t.Errorf("set default by a member: %v", err)
	}
	if got, err := s.Get(ctx, member, a.ID); err != nil || got.Spec.Name != "Support" {
		t.Errorf("a member reads %+v, %v", got, err)
	}
	if _, err := s.Get(ctx, other, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant reads it: %v", err)
	}
	if _, err := s.Resolve(ctx, other, Ref{AgentID: a.ID}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant runs it: %v", err)
	}
}

// A run resolves the published version unless it pins one; a member may
// pin only a version that was published once; an archived agent runs no
// more; the tenant's default answers a run that names no agent.
func TestResolve(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.service(t, nil)
	ctx := context.Background()
	a := create(t, s, `{"name":"Support","instructions":"v1 instructions","tools":["calculator"],"knowledge":["faq"],"maxIterations":3,"multitaskStrategy":"interrupt"}`)
	got, err := s.Resolve(ctx, member, Ref{AgentID: a.ID})
	if err != nil || got.ID != a.ID || got.Version != 1 || got.Instructions != "v1 instructions" || got.Model == nil ||
		got.Tools == nil || len(got.Tools.Names) != 1 || got.Knowledge[0] != "faq" || got.MaxIterations != 3 || got.Multitask != chat.MultitaskInterrupt {
		t.Fatalf("resolved %+v, %v", got, err)
	}
	if _, err := s.Update(ctx, admin, a.ID, Update{Patch: []byte(`{"instructions":"draft instructions"}`), Draft: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Resolve(ctx, member, Ref{AgentID: a.ID}); got.Version != 1 {
		t.Fatalf("a draft answered an unpinned run: version %d", got.Version)
	}
	if _, err := s.Resolve(ctx, member, Ref{AgentID: a.ID, Version: 2}); !errors.Is(err, ErrDraftPinned) {
		t.Fatalf("a member pinned the draft: %v", err)
	}
	if got, err := s.Resolve(ctx, admin, Ref{AgentID: a.ID, Version: 2}); err != nil || got.Instructions != "draft instructions" {
		t.Fatalf("the admin's draft run: %+v, %v", got, err)
	}
	if _, err := s.Resolve(ctx, admin, Ref{AgentID: a.ID, Version: 9}); !errors.Is(err, ErrVersionNotFound) {
		t.Fatalf("version 9: %v", err)
	}
	if _, err := s.Publish(ctx, admin, a.ID, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish(ctx, admin, a.ID, 1); err != nil { // roll back
		t.Fatal(err)
	}
	if got, err := s.Resolve(ctx, member, Ref{AgentID: a.ID, Version: 2}); err != nil || got.Version != 2 {
		t.Fatalf("a member pins a version published once: %+v, %v", got, err)
	}
	if got, _ := s.Resolve(ctx, member, Ref{AgentID: a.ID}); got.Version != 1 {
		t.Fatalf("after the rollback an unpinned run is version %d", got.Version)
	}

	// The tenant's default, then back to the built-in when it is archived.
	if got, _ := s.Resolve(ctx, member, Ref{}); got.ID != BuiltInID || got.Version != 0 || got.Tools != nil {
		t.Fatalf("no default: %+v", got)
	}
	if _, err := s.SetDefault(ctx, admin, a.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Resolve(ctx, member, Ref{}); got.ID != a.ID {
		t.Fatalf("the tenant's default: %+v", got)
	}
	if _, err := s.Archive(ctx, admin, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(ctx, member, Ref{AgentID: a.ID}); !errors.Is(err, store.ErrArchived) {
		t.Fatalf("an archived agent resolved: %v", err)
	}
	if got, err := s.Exact(ctx, member, a.ID, 2); err != nil || got.Version != 2 {
		t.Fatalf("a paused run of the archived agent continues on its version: %+v, %v", got, err)
	}
	if got, _ := s.Resolve(ctx, member, Ref{}); got.ID != BuiltInID {
		t.Fatalf("an archived default still answers: %+v", got)
	}
	if _, err := s.SetDefault(ctx, admin, a.ID); err == nil {
		t.Fatal("an archived agent became the default")
	}
}

// A change on one replica drops every replica's cached copy: the other
// replica hears it on the bus (its copy would otherwise live MaxStale).
func TestChangeReachesTheOtherReplica(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	a, b := f.service(t, clk.Now), f.service(t, clk.Now)
	toB := heard(b)
	ctx := context.Background()
	waitListening(t, a, b)
	ag := create(t, a, `{"name":"Support","instructions":"one"}`)
	if got, err := b.Resolve(ctx, member, Ref{AgentID: ag.ID}); err != nil || got.Instructions != "one" {
		t.Fatalf("b resolves %+v, %v", got, err)
	}
	if _, err := a.Update(ctx, admin, ag.ID, Update{Patch: []byte(`{"instructions":"two"}`)}); err != nil {
		t.Fatal(err)
	}
	// The clock stands still: only the bus can tell b.
	select {
	case c := <-toB:
		if c != (bus.Control{Kind: bus.ControlAgent, Tenant: "acme", AgentID: ag.ID}) {
			t.Fatalf("b heard %+v", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other replica never heard of the change")
	}
	if got, err := b.Resolve(ctx, member, Ref{AgentID: ag.ID}); err != nil || got.Instructions != "two" || got.Version != 2 {
		t.Fatalf("b resolves %+v, %v after the change", got, err)
	}
}

// A change made behind the cache's back (a lost bus message) is seen once
// the cached copy is MaxStale old, and not before.
func TestCachedAgentsExpire(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	s := f.service(t, clk.Now)
	ctx := context.Background()
	waitListening(t, s)
	ag := create(t, s, `{"name":"Support","instructions":"one"}`)
	if got, _ := s.Resolve(ctx, member, Ref{AgentID: ag.ID}); got.Instructions != "one" {
		t.Fatal(got)
	}
	// Another process's write, whose announcement never came.
	sp := Spec{Name: "Support", Model: DefaultModel, Instructions: "two"}
	if _, _, err := f.st.AddAgentVersion(ctx, admin, store.NewAgentVersion{AgentID: ag.ID, Base: 1, Spec: sp.Marshal(), Publish: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Resolve(ctx, member, Ref{AgentID: ag.ID}); got.Instructions != "one" {
		t.Fatalf("the cached copy was not used: %+v", got)
	}
	clk.Add(DefaultMaxStale)
	if got, _ := s.Resolve(ctx, member, Ref{AgentID: ag.ID}); got.Instructions != "two" || got.Version != 2 {
		t.Fatalf("after MaxStale: %+v", got)
	}
}

// waitListening waits until each service's control stream is up (it then
// caches), so a test's changes are heard.
func waitListening(t *testing.T, ss ...*Service) {
	t.Helper()
	for _, s := range ss {
		select {
		case <-s.Listening():
		case <-time.After(10 * time.Second):
			t.Fatal("the control stream never came up")
		}
	}
}

// TestSweepExpired: a cache of agents or settings is swept of its expired
// copies once it reaches its mark, which then moves to twice what is left
// (at least minSweep), so the copies of agents and tenants served once do
// not stay for the process's life.
func TestSweepExpired(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	const maxStale = 30 * time.Second
	fill := func(fresh, expired int) map[int]cached[string] {
		m := map[int]cached[string]{}
		for i := range fresh {
			m[i] = cached[string]{"fresh", t0.Add(-maxStale + time.Second)}
		}
		for i := range expired {
			m[fresh+i] = cached[string]{"expired", t0.Add(-maxStale)}
		}
		return m
	}
	for _, tt := range []struct {
		name            string
		fresh, expired  int
		next            int
		wantLen, wantNx int
	}{
		{"below its mark, nothing is swept", 10, 1000, minSweep, 1010, minSweep},
		{"at its mark, the expired go", 10, 1014, minSweep, 10, minSweep},
		{"what is left sets the next mark", 1500, 548, 2048, 1500, 3000},
		{"nothing expired: the mark doubles", 2048, 0, 2048, 2048, 4096},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := fill(tt.fresh, tt.expired)
			next := tt.next
			sweepExpired(m, t0, maxStale, &next)
			if len(m) != tt.wantLen || next != tt.wantNx {
				t.Fatalf("%d left, next mark %d; want %d and %d", len(m), next, tt.wantLen, tt.wantNx)
			}
			for _, c := range m {
				if c.v == "expired" && tt.wantLen != tt.fresh+tt.expired {
					t.Fatal("an expired copy was left by a sweep")
				}
			}
		})
	}
}
