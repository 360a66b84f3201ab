package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// recordUsage writes the usage records of r, when it ended, in tx: the
// transaction that records its end. Repeating it (a retried end) replaces
// them.
func recordUsage(ctx context.Context, tx pgx.Tx, r chat.Run) error {
	recs := store.UsageRecords(r)
	if len(recs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, u := range recs {
		b.Queue(`INSERT INTO usage_records (run_id, provider, model, tenant, user_id, agent_id, engine, conversation_id,
				calls, input_tokens, output_tokens, reasoning_tokens, cached_input_tokens, estimated, cost, currency, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
			ON CONFLICT (run_id, provider, model) DO UPDATE SET calls = excluded.calls, input_tokens = excluded.input_tokens,
				output_tokens = excluded.output_tokens, reasoning_tokens = excluded.reasoning_tokens,
				cached_input_tokens = excluded.cached_input_tokens, estimated = excluded.estimated, cost = excluded.cost,
				currency = excluded.currency, at = excluded.at`,
			u.RunID, u.Provider, u.Model, u.Tenant, u.User, u.AgentID, u.Engine, u.ConversationID,
			u.Calls, u.InputTokens, u.OutputTokens, u.ReasoningTokens, u.CachedInputTokens, u.Estimated, u.Cost, u.Currency, ms(u.At))
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("record usage of run %s: %w", r.ID, err)
	}
	return nil
}

// usageKeys are the SQL of each grouping's key.
var usageKeys = map[string]string{
	store.GroupByDay:    `to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
	store.GroupByModel:  `model`,
	store.GroupByAgent:  `agent_id`,
	store.GroupByUser:   `user_id`,
	store.GroupByEngine: `engine`,
}

const usageSums = `count(DISTINCT run_id), COALESCE(sum(calls), 0)::bigint, COALESCE(sum(input_tokens), 0)::bigint, COALESCE(sum(output_tokens), 0)::bigint,
	COALESCE(sum(reasoning_tokens), 0)::bigint, COALESCE(sum(cached_input_tokens), 0)::bigint, COALESCE(bool_or(estimated), false), COALESCE(sum(cost), 0)::bigint,
	count(DISTINCT NULLIF(currency, '')), COALESCE(max(currency), '')`

func scanTotals(sc pgx.Row, extra ...any) (store.UsageTotals, error) {
	var t store.UsageTotals
	var currencies int
	var currency string
	err := sc.Scan(append(extra, &t.Runs, &t.Calls, &t.InputTokens, &t.OutputTokens, &t.ReasoningTokens, &t.CachedInputTokens, &t.Estimated, &t.Cost, &currencies, &currency)...)
	t.Currency = store.MixedCurrencies(currencies, currency)
	return t, err
}

// SumUsage sums the tenant's usage records (store.Usage).
func (s *Store) SumUsage(ctx context.Context, q store.UsageQuery) (store.UsageReport, error) {
	args := []any{q.Tenant, ms(q.From)}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	where := `tenant = $1 AND at >= $2`
	if !q.To.IsZero() {
		where += ` AND at < ` + arg(ms(q.To))
	}
	if q.User != "" {
		where += ` AND user_id = ` + arg(q.User)
	}
	if q.AgentID != "" {
		where += ` AND agent_id = ` + arg(q.AgentID)
	}
	var out store.UsageReport
	var err error
	out.Total, err = scanTotals(s.pool.QueryRow(ctx, `SELECT `+usageSums+` FROM usage_records WHERE `+where, args...))
	if err != nil {
		return store.UsageReport{}, fmt.Errorf("sum usage: %w", interpretError(err))
	}
	if q.GroupBy == "" {
		return out, nil
	}
	key, ok := usageKeys[q.GroupBy]
	if !ok {
		return store.UsageReport{}, fmt.Errorf("sum usage: no grouping %q", q.GroupBy)
	}
	provider := `''::text`
	if q.GroupBy == store.GroupByModel {
		provider = `provider`
	}
	after, afterProvider, paged, err := store.DecodeUsageCursor(q.Page.Cursor)
	if err != nil {
		return store.UsageReport{}, fmt.Errorf("sum usage: %w", err)
	}
	having := ``
	if paged {
		// Byte order, as SQLite compares text.
		having = ` HAVING (` + key + ` COLLATE "C", ` + provider + ` COLLATE "C") > (` + arg(after) + ` COLLATE "C", ` + arg(afterProvider) + ` COLLATE "C")`
	}
	limit := max(q.Page.Limit, 1)
	rows, err := s.pool.Query(ctx, `SELECT `+key+`, `+provider+`, `+usageSums+` FROM usage_records WHERE `+where+
		` GROUP BY 1, 2`+having+` ORDER BY `+key+` COLLATE "C", `+provider+` COLLATE "C" LIMIT `+arg(limit+1), args...)
	if err != nil {
		return store.UsageReport{}, fmt.Errorf("sum usage: %w", interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		var g store.UsageGroup
		if g.UsageTotals, err = scanTotals(rows, &g.Key, &g.Provider); err != nil {
			return store.UsageReport{}, fmt.Errorf("sum usage: %w", interpretError(err))
		}
		out.Groups = append(out.Groups, g)
	}
	if err := rows.Err(); err != nil {
		return store.UsageReport{}, fmt.Errorf("sum usage: %w", interpretError(err))
	}
	if len(out.Groups) > limit {
		out.Groups = slices.Clip(out.Groups[:limit])
		out.Next = store.EncodeUsageCursor(out.Groups[limit-1])
	}
	return out, nil
}

// checkLimits refuses a start that one of limits does not fit, in tx (the
// start's transaction, holding the tenant's advisory lock: starts of one
// tenant are counted one after another, across replicas).
func checkLimits(ctx context.Context, tx pgx.Tx, tenant string, limits []store.Limit) error {
	for _, l := range limits {
		args := []any{tenant, ms(l.Since)}
		arg := func(v any) string {
			args = append(args, v)
			return "$" + strconv.Itoa(len(args))
		}
		userCol := `user_id`
		if l.Runs() {
			userCol = `owner`
		}
		where := `tenant = $1`
		if l.User != "" {
			where += ` AND ` + userCol + ` = ` + arg(l.User)
		}
		if l.AgentID != "" {
			where += ` AND agent_id = ` + arg(l.AgentID)
		}
		var used int64
		var oldest *time.Time
		var err error
		if l.Runs() {
			err = tx.QueryRow(ctx, `SELECT count(*), min(created_at) FROM runs WHERE `+where+` AND created_at > $2`, args...).Scan(&used, &oldest)
		} else {
			sum := `input_tokens + output_tokens`
			if l.Cost() {
				sum = `cost`
			}
			err = tx.QueryRow(ctx, `SELECT COALESCE(sum(`+sum+`), 0)::bigint FROM usage_records WHERE `+where+` AND at >= $2`, args...).Scan(&used)
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("check %s: %w", l.Kind, interpretError(err))
		}
		if used >= l.Max {
			qe := &store.QuotaError{Limit: l, Used: used}
			if oldest != nil {
				qe.Oldest = oldest.UTC()
			}
			return qe
		}
	}
	return nil
}
