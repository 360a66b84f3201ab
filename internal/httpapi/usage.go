package httpapi

import (
	"encoding/csv"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/usage"
)

func (s *Server) usageRoutes(api func(string, handlerFunc)) {
	api("GET /v1/usage", s.getUsage)
	api("GET /v1/usage/limits", s.getUsageLimits)
}

func (s *Server) usageStore() (store.Usage, error) {
	if s.usage == nil {
		return nil, apiErr(http.StatusNotFound, errcode.NotFound, "this server keeps no usage")
	}
	return s.usage, nil
}

// usageTotalsView is summed usage on the wire: tokens, and the cost in
// units of its currency (cost is rounded to nano-units; a sum of costs is
// exact).
type usageTotalsView struct {
	Runs              int64   `json:"runs"`
	Calls             int64   `json:"calls"`
	InputTokens       int64   `json:"inputTokens"`
	OutputTokens      int64   `json:"outputTokens"`
	TotalTokens       int64   `json:"totalTokens"`
	ReasoningTokens   int64   `json:"reasoningTokens"`
	CachedInputTokens int64   `json:"cachedInputTokens"`
	Cost              float64 `json:"cost"`
	Currency          string  `json:"currency,omitempty"`
	Estimated         bool    `json:"estimated"`
}

type usageGroupView struct {
	Key      string `json:"key"`
	Provider string `json:"provider,omitempty"`
	usageTotalsView
}

func viewTotals(t store.UsageTotals) usageTotalsView {
	return usageTotalsView{Runs: t.Runs, Calls: t.Calls, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens,
		TotalTokens: t.InputTokens + t.OutputTokens, ReasoningTokens: t.ReasoningTokens, CachedInputTokens: t.CachedInputTokens,
		Cost: usage.Units(t.Cost), Currency: t.Currency, Estimated: t.Estimated}
}

const usageTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// usageQuery reads GET /v1/usage's query: from and to (RFC 3339 times or
// YYYY-MM-DD days, UTC; default this month so far), groupBy, userId (an
// admin's choice; a member sees their own), agentId, and the page.
func (s *Server) usageQuery(r *http.Request, now time.Time) (store.UsageQuery, error) {
	sc := scopeOf(r.Context())
	qv := r.URL.Query()
	_, _, month, _ := usage.Windows(now)
	q := store.UsageQuery{Tenant: sc.Tenant, From: month, GroupBy: qv.Get("groupBy"), AgentID: qv.Get("agentId")}
	var err error
	if v := qv.Get("from"); v != "" {
		if q.From, err = usageTime(v); err != nil {
			return q, apiErr(http.StatusBadRequest, errcode.InvalidQuery, "from must be an RFC 3339 time or a YYYY-MM-DD day")
		}
	}
	if v := qv.Get("to"); v != "" {
		if q.To, err = usageTime(v); err != nil {
			return q, apiErr(http.StatusBadRequest, errcode.InvalidQuery, "to must be an RFC 3339 time or a YYYY-MM-DD day")
		}
		if !q.To.After(q.From) {
			return q, apiErr(http.StatusBadRequest, errcode.InvalidQuery, "to must be after from")
		}
	}
	if q.GroupBy != "" && !slices.Contains(store.UsageGroupings, q.GroupBy) {
		return q, apiErr(http.StatusBadRequest, errcode.InvalidQuery, "groupBy must be day, model, agent, user or engine")
	}
	// A member sees their own usage; an admin the tenant's, or one user's.
	q.User = qv.Get("userId")
	if !sc.IsAdmin() {
		if q.User != "" && q.User != sc.User {
			return q, apiErr(http.StatusForbidden, errcode.AdminRequired, "only an admin of the tenant may read another user's usage")
		}
		if q.GroupBy == store.GroupByUser {
			return q, apiErr(http.StatusForbidden, errcode.AdminRequired, "only an admin of the tenant may group usage by user")
		}
		q.User = sc.User
	}
	q.Page, err = page(r)
	return q, err
}

func usageTime(v string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t.UTC(), err
}

// getUsage answers GET /v1/usage: the usage of the caller (a member) or of
// the tenant (an admin) in a time range, grouped and paged, with the
// totals of every group; format=csv gives every group as CSV.
func (s *Server) getUsage(w http.ResponseWriter, r *http.Request) error {
	st, err := s.usageStore()
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	q, err := s.usageQuery(r, now)
	if err != nil {
		return err
	}
	switch f := r.URL.Query().Get("format"); f {
	case "", "json":
	case "csv":
		return s.usageCSV(w, r, st, q)
	default:
		return apiErr(http.StatusBadRequest, errcode.InvalidQuery, "format must be json or csv")
	}
	rep, err := st.SumUsage(r.Context(), q)
	if err != nil {
		return err
	}
	groups := make([]usageGroupView, 0, len(rep.Groups))
	for _, g := range rep.Groups {
		groups = append(groups, usageGroupView{Key: g.Key, Provider: g.Provider, usageTotalsView: viewTotals(g.UsageTotals)})
	}
	body := map[string]any{
		"from": q.From.Format(usageTimeFormat), "groups": groups, "total": viewTotals(rep.Total),
		"hasMore": rep.Next != "",
	}
	if !q.To.IsZero() {
		body["to"] = q.To.Format(usageTimeFormat)
	}
	if q.GroupBy != "" {
		body["groupBy"] = q.GroupBy
	}
	if q.User != "" {
		body["userId"] = q.User
	}
	if rep.Next != "" {
		body["nextCursor"] = rep.Next
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// maxCSVGroups bounds a CSV answer.
const maxCSVGroups = 100_000

// usageCSV writes every group (one page after another), then the total.
func (s *Server) usageCSV(w http.ResponseWriter, r *http.Request, st store.Usage, q store.UsageQuery) error {
	q.Page = store.Page{Limit: 1000}
	var groups []store.UsageGroup
	var total store.UsageTotals
	for len(groups) < maxCSVGroups {
		rep, err := st.SumUsage(r.Context(), q)
		if err != nil {
			return err
		}
		groups, total = append(groups, rep.Groups...), rep.Total
		if rep.Next == "" {
			break
		}
		q.Page.Cursor = rep.Next
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="usage.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	cw := csv.NewWriter(w)
	head := []string{"key", "provider", "runs", "calls", "inputTokens", "outputTokens", "totalTokens", "reasoningTokens", "cachedInputTokens", "cost", "currency", "estimated"}
	row := func(key, provider string, t store.UsageTotals) []string {
		n := func(v int64) string { return strconv.FormatInt(v, 10) }
		return []string{csvSafe(key), csvSafe(provider), n(t.Runs), n(t.Calls), n(t.InputTokens), n(t.OutputTokens), n(t.InputTokens + t.OutputTokens),
			n(t.ReasoningTokens), n(t.CachedInputTokens), strconv.FormatFloat(usage.Units(t.Cost), 'f', 9, 64), t.Currency, strconv.FormatBool(t.Estimated)}
	}
	_ = cw.Write(head)
	for _, g := range groups {
		_ = cw.Write(row(g.Key, g.Provider, g.UsageTotals))
	}
	_ = cw.Write(row("total", "", total))
	cw.Flush()
	return nil
}

// csvSafe keeps a spreadsheet from reading a key as a formula.
func csvSafe(v string) string {
	if v != "" && (v[0] == '=' || v[0] == '+' || v[0] == '-' || v[0] == '@') {
		return "'" + v
	}
	return v
}

// limitView is one limit in force and how much of it is used.
type limitView struct {
	Scope    string  `json:"scope"`
	Kind     string  `json:"kind"`
	Max      float64 `json:"max"`
	Used     float64 `json:"used"`
	ResetsAt string  `json:"resetsAt"`
}

// getUsageLimits answers GET /v1/usage/limits: the token and cost budgets
// in force for the caller (the tenant's and their own), with what each
// window holds so far. Runs limits are listed with used 0: they count
// starts, which the 429 reports.
func (s *Server) getUsageLimits(w http.ResponseWriter, r *http.Request) error {
	st, err := s.usageStore()
	if err != nil {
		return err
	}
	sc := scopeOf(r.Context())
	now := time.Now().UTC()
	out := []limitView{}
	if s.limits != nil {
		for _, l := range s.limits.For(sc.Tenant, sc.User, "").StoreLimits(sc.Tenant, sc.User, "", now) {
			v := limitView{Scope: l.Scope, Kind: l.Kind, Max: float64(l.Max), ResetsAt: l.Reset.Format(usageTimeFormat)}
			if !l.Runs() {
				rep, err := st.SumUsage(r.Context(), store.UsageQuery{Tenant: sc.Tenant, User: l.User, From: l.Since})
				if err != nil {
					return err
				}
				v.Used = float64(rep.Total.InputTokens + rep.Total.OutputTokens)
				if l.Cost() {
					v.Max, v.Used = usage.Units(l.Max), usage.Units(rep.Total.Cost)
				}
			}
			out = append(out, v)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"limits": out})
	return nil
}
