package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// insertUsageSQL writes one usage record, replacing one repeated.
const insertUsageSQL = `INSERT INTO usage_records (run_id, provider, model, tenant, user_id, agent_id, engine, conversation_id,
		calls, input_tokens, output_tokens, reasoning_tokens, cached_input_tokens, estimated, cost, currency, at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (run_id, provider, model) DO UPDATE SET calls = excluded.calls, input_tokens = excluded.input_tokens,
		output_tokens = excluded.output_tokens, reasoning_tokens = excluded.reasoning_tokens,
		cached_input_tokens = excluded.cached_input_tokens, estimated = excluded.estimated, cost = excluded.cost,
		currency = excluded.currency, at = excluded.at`

// recordUsage writes the usage records of r, when it ended, in tx: the
// transaction that records its end. Repeating it (a retried end) replaces
// them.
func (s *Store) recordUsage(ctx context.Context, tx *sql.Tx, r chat.Run) error {
	for _, u := range store.UsageRecords(r) {
		if _, err := s.prep.exec(ctx, tx, insertUsageSQL,
			u.RunID, u.Provider, u.Model, u.Tenant, u.User, u.AgentID, u.Engine, u.ConversationID,
			u.Calls, u.InputTokens, u.OutputTokens, u.ReasoningTokens, u.CachedInputTokens, u.Estimated, u.Cost, u.Currency, ms(u.At)); err != nil {
			return fmt.Errorf("record usage of run %s: %w", r.ID, err)
		}
	}
	return nil
}

// usageKeys are the SQL of each grouping's key.
var usageKeys = map[string]string{
	store.GroupByDay:    `strftime('%Y-%m-%d', at / 1000, 'unixepoch')`,
	store.GroupByModel:  `model`,
	store.GroupByAgent:  `agent_id`,
	store.GroupByUser:   `user_id`,
	store.GroupByEngine: `engine`,
}

const usageSums = `count(DISTINCT run_id), COALESCE(sum(calls), 0), COALESCE(sum(input_tokens), 0), COALESCE(sum(output_tokens), 0),
	COALESCE(sum(reasoning_tokens), 0), COALESCE(sum(cached_input_tokens), 0), COALESCE(max(estimated), 0), COALESCE(sum(cost), 0),
	count(DISTINCT NULLIF(currency, '')), COALESCE(max(currency), '')`

func scanTotals(sc interface{ Scan(...any) error }, extra ...any) (store.UsageTotals, error) {
	var t store.UsageTotals
	var est int64
	var currencies int
	var currency string
	err := sc.Scan(append(extra, &t.Runs, &t.Calls, &t.InputTokens, &t.OutputTokens, &t.ReasoningTokens, &t.CachedInputTokens, &est, &t.Cost, &currencies, &currency)...)
	t.Estimated, t.Currency = est != 0, store.MixedCurrencies(currencies, currency)
	return t, err
}

// SumUsage sums the tenant's usage records (store.Usage).
func (s *Store) SumUsage(ctx context.Context, q store.UsageQuery) (store.UsageReport, error) {
	where := `tenant = ? AND at >= ?`
	args := []any{q.Tenant, ms(q.From)}
	if !q.To.IsZero() {
		where += ` AND at < ?`
		args = append(args, ms(q.To))
	}
	if q.User != "" {
		where += ` AND user_id = ?`
		args = append(args, q.User)
	}
	if q.AgentID != "" {
		where += ` AND agent_id = ?`
		args = append(args, q.AgentID)
	}
	var out store.UsageReport
	var err error
	out.Total, err = scanTotals(s.read.QueryRowContext(ctx, `SELECT `+usageSums+` FROM usage_records WHERE `+where, args...))
	if err != nil {
		return store.UsageReport{}, fmt.Errorf("sum usage: %w", err)
	}
	if q.GroupBy == "" {
		return out, nil
	}
	key, ok := usageKeys[q.GroupBy]
	if !ok {
		return store.UsageReport{}, fmt.Errorf("sum usage: no grouping %q", q.GroupBy)
	}
	provider := `''`
	if q.GroupBy == store.GroupByModel {
		provider = `provider`
	}
	after, afterProvider, paged, err := store.DecodeUsageCursor(q.Page.Cursor)
	if err != nil {
		return store.UsageReport{}, fmt.Errorf("sum usage: %w", err)
	}
	having := ``
	if paged {
		having = ` HAVING (` + key + `, ` + provider + `) > (?, ?)`
		args = append(args, after, afterProvider)
	}
	limit := max(q.Page.Limit, 1)
	rows, err := s.read.QueryContext(ctx, `SELECT `+key+`, `+provider+`, `+usageSums+` FROM usage_records WHERE `+where+
		` GROUP BY 1, 2`+having+` ORDER BY 1, 2 LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return store.UsageReport{}, fmt.Errorf("sum usage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var g store.UsageGroup
		if g.UsageTotals, err = scanTotals(rows, &g.Key, &g.Provider); err != nil {
			return store.UsageReport{}, fmt.Errorf("sum usage: %w", err)
		}
		out.Groups = append(out.Groups, g)
	}
	if err := rows.Err(); err != nil {
		return store.UsageReport{}, fmt.Errorf("sum usage: %w", err)
	}
	if len(out.Groups) > limit {
		out.Groups = slices.Clip(out.Groups[:limit])
		out.Next = store.EncodeUsageCursor(out.Groups[limit-1])
	}
	return out, nil
}

// checkLimits refuses a start that one of limits does not fit, in tx (the
// start's transaction: SQLite's single writer orders the starts).
func checkLimits(ctx context.Context, tx *sql.Tx, tenant string, limits []store.Limit) error {
	for _, l := range limits {
		userCol := `user_id`
		if l.Runs() {
			userCol = `owner`
		}
		where := `tenant = ?`
		args := []any{tenant}
		if l.User != "" {
			where += ` AND ` + userCol + ` = ?`
			args = append(args, l.User)
		}
		if l.AgentID != "" {
			where += ` AND agent_id = ?`
			args = append(args, l.AgentID)
		}
		var used int64
		var oldest sql.NullInt64
		var err error
		if l.Runs() {
			err = tx.QueryRowContext(ctx, `SELECT count(*), min(created_at) FROM runs WHERE `+where+` AND created_at > ?`,
				append(args, ms(l.Since))...).Scan(&used, &oldest)
		} else {
			sum := `input_tokens + output_tokens`
			if l.Cost() {
				sum = `cost`
			}
			err = tx.QueryRowContext(ctx, `SELECT COALESCE(sum(`+sum+`), 0) FROM usage_records WHERE `+where+` AND at >= ?`,
				append(args, ms(l.Since))...).Scan(&used)
		}
		if err != nil {
			return fmt.Errorf("check %s: %w", l.Kind, err)
		}
		if used >= l.Max {
			qe := &store.QuotaError{Limit: l, Used: used}
			if oldest.Valid {
				qe.Oldest = fromMS(oldest.Int64)
			}
			return qe
		}
	}
	return nil
}
