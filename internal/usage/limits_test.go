package usage_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/usage"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLimitsLayersAndReload: the environment's defaults, a tenant's
// override, users and agents by id or "*"; the engine file read again
// when it changes (no restart), and a file that stops parsing keeps the
// limits last read.
func TestLimitsLayersAndReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "engines.json")
	write(t, path, `{"tenants": {}, "limits": {"tenants": {
		"acme": {"runsPerMinute": 120, "users": {"*": {"tokensPerDay": 200}, "alice": {"tokensPerDay": 1000}},
		         "agents": {"ag1": {"costPerMonth": 2.5}}},
		"*": {"tokensPerMonth": 9}}}}`)
	l, err := usage.New(usage.Config{Defaults: usage.Policy{RunsPerMinute: 10, TokensPerMonth: 50}, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	p := l.For("acme", "alice", "ag1")
	if p.Tenant != (usage.Policy{RunsPerMinute: 120, TokensPerMonth: 50}) || p.User.TokensPerDay != 1000 || p.Agent.CostPerMonth != 2.5 {
		t.Errorf("acme/alice/ag1: %+v", p)
	}
	if p := l.For("acme", "bob", ""); p.User.TokensPerDay != 200 || p.Agent != (usage.Policy{}) {
		t.Errorf("acme/bob: %+v", p)
	}
	if p := l.For("globex", "carol", ""); p.Tenant != (usage.Policy{RunsPerMinute: 10, TokensPerMonth: 9}) || p.User != (usage.Policy{}) {
		t.Errorf("globex (the \"*\" tenant): %+v", p)
	}

	// The store's limits at a time: windows and order (runs first).
	now := time.Date(2026, 5, 17, 13, 4, 5, 0, time.UTC)
	ls := l.For("acme", "alice", "ag1").StoreLimits("acme", "alice", "ag1", now)
	if len(ls) != 4 || ls[0].Kind != store.LimitRunsPerMinute || ls[0].Scope != store.ScopeTenant || ls[0].Max != 120 ||
		!ls[0].Since.Equal(now.Add(-time.Minute)) {
		t.Fatalf("store limits %+v", ls)
	}
	if b := ls[1]; b.Kind != store.LimitTokensPerDay || b.Scope != store.ScopeUser || b.User != "alice" ||
		!b.Since.Equal(time.Date(2026, 5, 17, 0, 0, 0, 0, time.UTC)) || !b.Reset.Equal(time.Date(2026, 5, 18, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("user budget %+v", b)
	}
	if b := ls[2]; b.Kind != store.LimitCostPerMonth || b.AgentID != "ag1" || b.Max != 2_500_000_000 {
		t.Errorf("agent budget %+v", b)
	}

	// Changed on disk: in force at the next start, without a restart. A
	// negative value lifts the environment's limit.
	write(t, path, `{"limits": {"tenants": {"acme": {"runsPerMinute": -1, "tokensPerDay": 70}}}}`)
	if p := l.For("acme", "alice", ""); p.Tenant != (usage.Policy{RunsPerMinute: -1, TokensPerDay: 70, TokensPerMonth: 50}) || p.User != (usage.Policy{}) {
		t.Errorf("after the change: %+v", p)
	}
	if ls := l.For("acme", "alice", "").StoreLimits("acme", "alice", "", now); len(ls) != 2 || ls[0].Kind != store.LimitTokensPerDay {
		t.Errorf("a lifted runs limit is not checked: %+v", ls)
	}

	// A file that stops parsing keeps the last limits read.
	write(t, path, `{"limits": {"tenants": {"acme": {"runsPerMinut": 5}}}} `)
	if p := l.For("acme", "alice", ""); p.Tenant.TokensPerDay != 70 {
		t.Errorf("after a broken file: %+v", p)
	}
	// At start, a broken file is an error.
	if _, err := usage.New(usage.Config{Path: path}); err == nil {
		t.Error("New accepted a file with an unknown field")
	}
}

// TestRefusalMessage names the limit, its amount and when it resets.
func TestRefusalMessage(t *testing.T) {
	t.Parallel()
	reset := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	r := usage.Refused(&store.QuotaError{Limit: store.Limit{Kind: store.LimitCostPerMonth, Scope: store.ScopeAgent, Max: 2_500_000_000, Reset: reset}, Used: 2_600_000_000},
		reset.Add(-90*time.Second))
	if r.Code != "quota_exceeded" || r.PolicyName() != "agent-cost_per_month" {
		t.Errorf("refusal %+v", r)
	}
	if got, want := r.Message(reset.Add(-90*time.Second)), "this agent's limit of 2.50 cost per month is reached; it resets at 2026-06-01T00:00:00Z (in 1m30s)"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
