package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
)

// Usage accounting. A run's usage is recorded when the run ends, in the
// same transaction as its end (UpdateRun with Usage and EndedAt): one
// record per model the run called, kept after the run, its conversation
// and its events are deleted (finance keeps history; a deleted
// conversation does not refund its tokens).
type Usage interface {
	// SumUsage sums the usage records of q.Tenant in [q.From, q.To),
	// narrowed by q.User and q.AgentID, grouped by q.GroupBy (no groups
	// for ""). Groups are ordered by key, paged by q.Page; Total covers
	// every group, not one page.
	SumUsage(ctx context.Context, q UsageQuery) (UsageReport, error)
}

// Ways to group usage (UsageQuery.GroupBy).
const (
	GroupByDay    = "day"    // the UTC day of the run's end, YYYY-MM-DD
	GroupByModel  = "model"  // the model's name; the group also names its provider
	GroupByAgent  = "agent"  // the agent's id, "" for runs without one
	GroupByUser   = "user"   // the run's owner
	GroupByEngine = "engine" // the engine that ran it
)

// UsageGroupings are the valid UsageQuery.GroupBy values besides "".
var UsageGroupings = []string{GroupByDay, GroupByModel, GroupByAgent, GroupByUser, GroupByEngine}

// UsageQuery is what SumUsage sums.
type UsageQuery struct {
	Tenant string
	// User and AgentID, when set, keep that user's (that agent's) runs.
	User    string
	AgentID string
	// From is inclusive and To exclusive; a zero To is no upper bound.
	From, To time.Time
	GroupBy  string
	Page     Page
}

// UsageTotals are summed usage records.
type UsageTotals struct {
	Runs              int64 `json:"runs"`
	Calls             int64 `json:"calls"`
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	ReasoningTokens   int64 `json:"reasoningTokens"`
	CachedInputTokens int64 `json:"cachedInputTokens"`
	// Estimated: some of the counts are approximations.
	Estimated bool `json:"estimated"`
	// Cost in nano-units of Currency ("" when nothing was priced,
	// event.MixedCurrency when several currencies were summed).
	Cost     int64  `json:"-"`
	Currency string `json:"currency,omitempty"`
}

// UsageGroup is one group of a usage report.
type UsageGroup struct {
	Key string
	// Provider is the model's provider (GroupByModel only).
	Provider string
	UsageTotals
}

// UsageReport is what SumUsage returns.
type UsageReport struct {
	Groups []UsageGroup
	Next   string
	Total  UsageTotals
}

// UsageRecord is one model's usage in one run, as stored.
type UsageRecord struct {
	RunID, Tenant, User, AgentID, Engine, ConversationID string
	event.ModelUsage
	At time.Time
}

// UsageRecords are the records of an ended run's usage: one per model;
// one for the run's model (or "unknown") when its usage names none.
func UsageRecords(r chat.Run) []UsageRecord {
	if r.EndedAt == nil || chat.Active(r.Status) || r.Usage.Empty() {
		return nil
	}
	models := r.Usage.Models
	if len(models) == 0 {
		u := r.Usage
		name := r.Model
		if name == "" {
			name = "unknown"
		}
		models = []event.ModelUsage{{Model: name, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, ReasoningTokens: u.ReasoningTokens,
			CachedInputTokens: u.CachedInputTokens, Estimated: u.Estimated, Cost: u.Cost, Currency: u.Currency}}
	}
	out := make([]UsageRecord, len(models))
	for i, m := range models {
		out[i] = UsageRecord{RunID: r.ID, Tenant: r.Tenant, User: r.Owner, AgentID: r.AgentID, Engine: r.Engine,
			ConversationID: r.ConversationID, ModelUsage: m, At: *r.EndedAt}
	}
	return out
}

// EncodeUsageCursor is the cursor after a group (the last of a page).
func EncodeUsageCursor(g UsageGroup) string {
	return base64.RawURLEncoding.EncodeToString([]byte(g.Key + "\x00" + g.Provider))
}

// DecodeUsageCursor reads a cursor of EncodeUsageCursor; "" is the first page.
func DecodeUsageCursor(s string) (key, provider string, ok bool, err error) {
	if s == "" {
		return "", "", false, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", "", false, ErrBadCursor
	}
	for i, c := range b {
		if c == 0 {
			key, provider = string(b[:i]), string(b[i+1:])
			if !chat.ValidText(key) || !chat.ValidText(provider) {
				return "", "", false, ErrBadCursor
			}
			return key, provider, true, nil
		}
	}
	return "", "", false, ErrBadCursor
}

// MixedCurrencies folds the number of distinct currencies summed and one
// of them into a sum's currency.
func MixedCurrencies(n int, one string) string {
	if n > 1 {
		return event.MixedCurrency
	}
	return one
}

// Quota limits checked by StartRun.
const (
	// LimitRunsPerMinute counts the runs started after Since (strictly:
	// a run started at Since has left the window).
	LimitRunsPerMinute = "runs_per_minute"
	// LimitTokensPerDay and LimitTokensPerMonth sum input plus output
	// tokens of the runs ended since the window's start.
	LimitTokensPerDay   = "tokens_per_day"
	LimitTokensPerMonth = "tokens_per_month"
	// LimitCostPerMonth sums the cost (nano-units) of runs ended since the
	// month's start.
	LimitCostPerMonth = "cost_per_month"
)

// Limit is one quota a start must fit. The store counts what it names
// since Since, under the same per-tenant lock as RunStart.MaxExecuting:
// across every replica, exactly Max starts fit a runs limit.
type Limit struct {
	// Kind is one of the Limit* constants.
	Kind string
	// Scope says whose runs count: "tenant", "user" (User's runs in the
	// tenant) or "agent" (AgentID's runs in the tenant).
	Scope   string
	User    string
	AgentID string
	// Max is the most runs, tokens or cost (nano-units) the window allows;
	// a start is refused once the window holds Max.
	Max int64
	// Since is the window's start; Reset its end (reported to the client).
	Since, Reset time.Time
}

// Limit scopes.
const (
	ScopeTenant = "tenant"
	ScopeUser   = "user"
	ScopeAgent  = "agent"
)

// QuotaError is a start refused by one of RunStart.Limits.
type QuotaError struct {
	Limit Limit
	// Used is what the window held.
	Used int64
	// Oldest is, for a runs limit, when the oldest run counted started:
	// a start fits again a minute after it.
	Oldest time.Time
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("%s %s limit reached: %d of %d", e.Limit.Scope, e.Limit.Kind, e.Used, e.Limit.Max)
}

// Runs reports whether l counts the runs started since l.Since in its
// scope; otherwise it sums the tokens (or the cost) of the usage recorded
// since then.
func (l Limit) Runs() bool { return l.Kind == LimitRunsPerMinute }

// Cost reports whether l limits cost rather than tokens (for a usage limit).
func (l Limit) Cost() bool { return l.Kind == LimitCostPerMonth }
