package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// usageRun starts a run of sc on agent (with engine "local") and ends it at
// end with u.
func usageRun(t *testing.T, s store.Store, sc chat.Scope, agent string, end time.Time, u event.Usage) chat.Run {
	t.Helper()
	started := must[store.RunStarted](t)(s.StartRun(ctx(t), sc, &store.RunStart{
		NewConversation: &chat.Conversation{},
		Run:             chat.Run{Input: "x", Status: chat.RunRunning, Engine: "local", AgentID: agent, Model: "fallback-model"},
		Message:         chat.Message{Role: chat.RoleUser, Content: "x"},
	}))
	return must[chat.Run](t)(s.UpdateRun(ctx(t), sc.Tenant, started.Run.ID, store.RunUpdate{
		Status: chat.RunSucceeded, Usage: &u, EndedAt: &end, State: []byte("null"),
	}))
}

func twoModels() event.Usage {
	var u event.Usage
	u = u.AddCall(event.ModelUsage{Provider: "openai", Model: "gpt-x", InputTokens: 100, CachedInputTokens: 60, OutputTokens: 20, ReasoningTokens: 5, Cost: 1_500_000, Currency: "USD"})
	u = u.AddCall(event.ModelUsage{Provider: "openai", Model: "gpt-x", InputTokens: 50, OutputTokens: 10, Cost: 700_000, Currency: "USD"})
	u = u.AddCall(event.ModelUsage{Provider: "anthropic", Model: "claude-y", InputTokens: 7, OutputTokens: 3, Estimated: true, Cost: 11, Currency: "USD"})
	return u
}

// testUsageRecords pins what the end of a run records: one record per
// model, written with the end, summed and grouped by SumUsage within the
// tenant, kept when the conversation goes, never counted twice.
func testUsageRecords(t *testing.T, s store.Store) {
	day1 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	day2 := day1.Add(24 * time.Hour)
	r1 := usageRun(t, s, alice, "ag1", day1, twoModels())
	usageRun(t, s, bob, "", day2, event.Usage{}.AddCall(event.ModelUsage{Provider: "openai", Model: "gpt-x", InputTokens: 1, OutputTokens: 1, Cost: 3, Currency: "USD"}))
	// No models named (a run stored before accounting): the run's model.
	usageRun(t, s, bob, "", day2, event.Usage{InputTokens: 4, OutputTokens: 4})
	usageRun(t, s, eve, "", day2, twoModels()) // another tenant
	// An ended run without usage records nothing.
	usageRun(t, s, alice, "", day2, event.Usage{})
	// Repeating the end (a retry) replaces, never adds.
	u := twoModels()
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r1.ID, store.RunUpdate{Status: chat.RunSucceeded, Usage: &u, EndedAt: &day1}))

	q := store.UsageQuery{Tenant: "acme", From: day1.Add(-time.Hour)}
	all := must[store.UsageReport](t)(s.SumUsage(ctx(t), q))
	want := store.UsageTotals{Runs: 3, Calls: 4, InputTokens: 162, OutputTokens: 38, ReasoningTokens: 5, CachedInputTokens: 60,
		Estimated: true, Cost: 2_200_014, Currency: "USD"}
	if all.Total != want || len(all.Groups) != 0 {
		t.Fatalf("tenant total %+v (groups %v), want %+v", all.Total, all.Groups, want)
	}

	q.GroupBy = store.GroupByModel
	q.Page.Limit = 10
	byModel := must[store.UsageReport](t)(s.SumUsage(ctx(t), q))
	keys := func(r store.UsageReport) (out []string) {
		for _, g := range r.Groups {
			out = append(out, g.Provider+"/"+g.Key)
		}
		return out
	}
	if got := keys(byModel); len(got) != 3 || got[0] != "anthropic/claude-y" || got[1] != "/fallback-model" || got[2] != "openai/gpt-x" {
		t.Fatalf("models %v", got)
	}
	if g := byModel.Groups[2]; g.Runs != 2 || g.Calls != 3 || g.InputTokens != 151 || g.Cost != 2_200_003 || g.Estimated {
		t.Errorf("gpt-x group %+v", g)
	}
	if g := byModel.Groups[1]; g.InputTokens != 4 || g.Currency != "" || g.Cost != 0 {
		t.Errorf("unpriced group %+v", g)
	}
	if byModel.Total != want {
		t.Errorf("total beside groups %+v, want %+v", byModel.Total, want)
	}

	// Paging: one group a page, in order, until no cursor.
	q.Page.Limit = 1
	var paged []string
	for range 5 {
		page := must[store.UsageReport](t)(s.SumUsage(ctx(t), q))
		paged = append(paged, keys(page)...)
		if page.Next == "" {
			break
		}
		q.Page.Cursor = page.Next
	}
	if len(paged) != 3 || paged[2] != "openai/gpt-x" {
		t.Errorf("paged models %v", paged)
	}

	for _, tt := range []struct {
		by   string
		want []string
	}{
		{store.GroupByDay, []string{"/2026-03-01", "/2026-03-02"}},
		{store.GroupByUser, []string{"/alice", "/bob"}},
		{store.GroupByAgent, []string{"/", "/ag1"}},
		{store.GroupByEngine, []string{"/local"}},
	} {
		got := keys(must[store.UsageReport](t)(s.SumUsage(ctx(t), store.UsageQuery{Tenant: "acme", From: day1.Add(-time.Hour), GroupBy: tt.by, Page: store.Page{Limit: 10}})))
		if len(got) != len(tt.want) || got[0] != tt.want[0] || got[len(got)-1] != tt.want[len(tt.want)-1] {
			t.Errorf("by %s: %v, want %v", tt.by, got, tt.want)
		}
	}

	// A user's own, an agent's, and a time range.
	mine := must[store.UsageReport](t)(s.SumUsage(ctx(t), store.UsageQuery{Tenant: "acme", User: "bob", From: day1}))
	if mine.Total.Runs != 2 || mine.Total.InputTokens != 5 {
		t.Errorf("bob's usage %+v", mine.Total)
	}
	ag := must[store.UsageReport](t)(s.SumUsage(ctx(t), store.UsageQuery{Tenant: "acme", AgentID: "ag1", From: day1}))
	if ag.Total.Runs != 1 || ag.Total.InputTokens != 157 {
		t.Errorf("ag1's usage %+v", ag.Total)
	}
	first := must[store.UsageReport](t)(s.SumUsage(ctx(t), store.UsageQuery{Tenant: "acme", From: day1, To: day2}))
	if first.Total.Runs != 1 {
		t.Errorf("[day1, day2) holds %d runs, want 1 (To is exclusive)", first.Total.Runs)
	}
	if none := must[store.UsageReport](t)(s.SumUsage(ctx(t), store.UsageQuery{Tenant: "nobody", From: day1})); none.Total != (store.UsageTotals{}) {
		t.Errorf("a tenant without usage: %+v", none.Total)
	}

	// Deleting the conversation keeps the records.
	if err := s.DeleteConversation(ctx(t), alice, r1.ConversationID); err != nil {
		t.Fatal(err)
	}
	if after := must[store.UsageReport](t)(s.SumUsage(ctx(t), store.UsageQuery{Tenant: "acme", From: day1.Add(-time.Hour)})); after.Total != want {
		t.Errorf("after deleting a conversation %+v, want %+v", after.Total, want)
	}
	if _, err := s.SumUsage(ctx(t), store.UsageQuery{Tenant: "acme", GroupBy: store.GroupByDay, Page: store.Page{Limit: 1, Cursor: "!!"}}); !errors.Is(err, store.ErrBadCursor) {
		t.Errorf("bad cursor: %v", err)
	}
}

// testQuotaLimits pins StartRun's quotas: a runs limit counts the starts
// since its window's start (by the runs' CreatedAt, the caller's clock),
// a token or cost limit the usage recorded since, each in its scope; a
// refused start writes nothing; racing starts never pass the limit.
func testQuotaLimits(t *testing.T, s store.Store) {
	now := time.Date(2026, 4, 10, 12, 0, 0, 0, time.UTC)
	start := func(sc chat.Scope, at time.Time, limits ...store.Limit) (store.RunStarted, error) {
		return s.StartRun(ctx(t), sc, &store.RunStart{
			NewConversation: &chat.Conversation{},
			Run:             chat.Run{Input: "x", Status: chat.RunRunning, CreatedAt: at, AgentID: "ag"},
			Message:         chat.Message{Role: chat.RoleUser, Content: "x"},
			Limits:          limits,
		})
	}
	perMinute := func(at time.Time, max int64) store.Limit {
		return store.Limit{Kind: store.LimitRunsPerMinute, Scope: store.ScopeTenant, Max: max, Since: at.Add(-time.Minute), Reset: at.Add(time.Minute)}
	}
	for i := range 3 {
		must[store.RunStarted](t)(start(alice, now.Add(time.Duration(i)*time.Second), perMinute(now, 3)))
	}
	_, err := start(bob, now.Add(5*time.Second), perMinute(now.Add(5*time.Second), 3))
	var qe *store.QuotaError
	if !errors.As(err, &qe) || qe.Used != 3 || !qe.Oldest.Equal(now) || qe.Limit.Kind != store.LimitRunsPerMinute {
		t.Fatalf("fourth start in the minute: %v (%+v)", err, qe)
	}
	if convs, _, _ := s.ListConversations(ctx(t), bob, store.ConversationFilter{}, store.Page{Limit: 10}); len(convs) != 0 {
		t.Fatalf("a refused start left %d conversations", len(convs))
	}
	must[store.RunStarted](t)(start(eve, now.Add(5*time.Second), perMinute(now.Add(5*time.Second), 3))) // another tenant
	// The window slides: a minute after the first start, one fits again.
	later := now.Add(time.Minute)
	must[store.RunStarted](t)(start(bob, later, perMinute(later, 3)))
	// A user's limit counts that user's runs only; an agent's, the agent's.
	userLimit := store.Limit{Kind: store.LimitRunsPerMinute, Scope: store.ScopeUser, User: "bob", Max: 1, Since: later.Add(-time.Minute)}
	if _, err := start(bob, later, userLimit); !errors.As(err, &qe) || qe.Used != 1 {
		t.Errorf("bob's second start under his limit of 1: %v", err)
	}
	userLimit.User, userLimit.Max = "carol", 1
	must[store.RunStarted](t)(start(chat.Scope{Tenant: "acme", User: "carol"}, later, userLimit))
	agentLimit := store.Limit{Kind: store.LimitRunsPerMinute, Scope: store.ScopeAgent, AgentID: "other", Max: 1, Since: later.Add(-time.Hour)}
	must[store.RunStarted](t)(start(alice, later, agentLimit))

	// Token and cost budgets count the usage recorded in their window.
	end := now.Add(time.Second)
	usageRun(t, s, alice, "ag", end, event.Usage{}.AddCall(event.ModelUsage{Model: "m", InputTokens: 60, OutputTokens: 40, Cost: 5000, Currency: "USD"}))
	month := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	tokens := store.Limit{Kind: store.LimitTokensPerMonth, Scope: store.ScopeTenant, Max: 100, Since: month}
	if _, err := start(alice, later, tokens); !errors.As(err, &qe) || qe.Used != 100 {
		t.Errorf("start at a spent token budget: %v", err)
	}
	tokens.Max = 101
	must[store.RunStarted](t)(start(alice, later, tokens))
	tokens.Since, tokens.Max = end.Add(time.Millisecond), 100 // the usage is before this window
	must[store.RunStarted](t)(start(alice, later, tokens))
	userTokens := store.Limit{Kind: store.LimitTokensPerDay, Scope: store.ScopeUser, User: "bob", Max: 1, Since: month}
	must[store.RunStarted](t)(start(bob, later, userTokens)) // alice spent them
	cost := store.Limit{Kind: store.LimitCostPerMonth, Scope: store.ScopeAgent, AgentID: "ag", Max: 5000, Since: month}
	if _, err := start(alice, later, cost); !errors.As(err, &qe) || qe.Used != 5000 {
		t.Errorf("start at a spent cost budget: %v", err)
	}

	// Racing starts: exactly Max are admitted.
	race := chat.Scope{Tenant: "race-quota", User: "u"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, refused := 0, 0
	for range 10 {
		wg.Go(func() {
			_, err := start(race, now, perMinute(now, 4))
			mu.Lock()
			defer mu.Unlock()
			var qe *store.QuotaError
			switch {
			case err == nil:
				admitted++
			case errors.As(err, &qe):
				refused++
			default:
				t.Errorf("racing start: %v", err)
			}
		})
	}
	wg.Wait()
	if admitted != 4 || refused != 6 {
		t.Errorf("racing starts: %d admitted, %d refused; want 4 and 6", admitted, refused)
	}
}
