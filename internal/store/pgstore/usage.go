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
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// usageFromRunSQL writes the usage records of the run that a CTE r (an
// UPDATE … RETURNING of runs) returns, when it ended: one per model, from
// usageArgs' arrays ($14–$23), the run's own columns from r. A NULL model
// is the run's model as r has it, or "unknown" (store.UsageRecords' rule
// for a usage that names no model). Repeating it (a retried end) replaces
// the records.
const usageFromRunSQL = `INSERT INTO usage_records (run_id, provider, model, tenant, user_id, agent_id, engine, conversation_id,
		calls, input_tokens, output_tokens, reasoning_tokens, cached_input_tokens, estimated, cost, currency, at)
	SELECT r.id, m.provider, COALESCE(m.model, NULLIF(r.model, ''), 'unknown'), r.tenant, r.owner, r.agent_id, r.engine, r.conversation_id,
		m.calls, m.input, m.output, m.reasoning, m.cached, m.estimated, m.cost, m.currency, r.ended_at
	FROM r, unnest($14::text[], $15::text[], $16::bigint[], $17::bigint[], $18::bigint[], $19::bigint[], $20::bigint[], $21::boolean[], $22::bigint[], $23::text[])
		AS m (provider, model, calls, input, output, reasoning, cached, estimated, cost, currency)
	WHERE r.ended_at IS NOT NULL AND r.status NOT IN ` + activeStatuses + `
	ON CONFLICT (run_id, provider, model) DO UPDATE SET calls = excluded.calls, input_tokens = excluded.input_tokens,
		output_tokens = excluded.output_tokens, reasoning_tokens = excluded.reasoning_tokens,
		cached_input_tokens = excluded.cached_input_tokens, estimated = excluded.estimated, cost = excluded.cost,
		currency = excluded.currency, at = excluded.at`

// usageArgs are usageFromRunSQL's arrays for an end recording usage u:
// store.UsageRecords' models, the model left NULL where the usage names
// none (the record is then the run's model's, which the row has once
// updated). A model named twice keeps its last figures, as when each
// record was an INSERT of its own: one statement may not touch a row twice.
func usageArgs(u event.Usage) []any {
	// Only the models are read from these records: the run's columns,
	// status and end come from the row the UPDATE returns.
	recs := store.UsageRecords(chat.Run{Status: chat.RunSucceeded, EndedAt: new(time.Time), Usage: u})
	kept := recs[:0]
	for i, r := range recs {
		if !slices.ContainsFunc(recs[i+1:], func(o store.UsageRecord) bool { return o.Provider == r.Provider && o.Model == r.Model }) {
			kept = append(kept, r)
		}
	}
	n := len(kept)
	providers, models := make([]string, n), make([]*string, n)
	calls, inputs, outputs, reasoning, cached := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	estimated, costs, currencies := make([]bool, n), make([]int64, n), make([]string, n)
	for i, r := range kept {
		providers[i], calls[i], inputs[i], outputs[i] = r.Provider, int64(r.Calls), int64(r.InputTokens), int64(r.OutputTokens)
		reasoning[i], cached[i], estimated[i], costs[i], currencies[i] = int64(r.ReasoningTokens), int64(r.CachedInputTokens), r.Estimated, r.Cost, r.Currency
		if len(u.Models) > 0 {
			models[i] = &r.Model
		}
	}
	return []any{providers, models, calls, inputs, outputs, reasoning, cached, estimated, costs, currencies}
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
