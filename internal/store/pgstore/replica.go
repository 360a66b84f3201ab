package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// RegisterReplica begins a new term of replica id, in one statement.
func (s *Store) RegisterReplica(ctx context.Context, id string, until time.Time, sole bool) (int64, error) {
	if sole {
		if _, err := s.live.Exec(ctx, `UPDATE replicas SET alive_until = '-infinity' WHERE id <> $1`, id); err != nil {
			s.live.Reset()
			return 0, fmt.Errorf("register replica %s: %w", id, interpretError(err))
		}
	}
	var epoch int64
	err := s.live.QueryRow(ctx, `INSERT INTO replicas (id, epoch, alive_until) VALUES ($1, 1, $2)
		ON CONFLICT (id) DO UPDATE SET epoch = replicas.epoch + 1, alive_until = excluded.alive_until
		RETURNING epoch`, id, ms(until)).Scan(&epoch)
	if err != nil {
		s.live.Reset()
		return 0, fmt.Errorf("register replica %s: %w", id, interpretError(err))
	}
	return epoch, nil
}

// RenewReplica extends a term that is still alive: the heartbeat, one
// single-row UPDATE per replica per period, on the pool of its own.
func (s *Store) RenewReplica(ctx context.Context, id string, epoch int64, at, until time.Time) error {
	tag, err := s.live.Exec(ctx, `UPDATE replicas SET alive_until = $3 WHERE id = $1 AND epoch = $2 AND alive_until >= $4`,
		id, epoch, ms(until), ms(at))
	if err != nil {
		// The heartbeat's few connections may be dead ones (the network
		// dropped them without a word): dial afresh next time rather than
		// wait out another timeout on each.
		s.live.Reset()
		return fmt.Errorf("renew replica %s: %w", id, interpretError(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("renew replica %s: %w: term %d is over", id, store.ErrConflict, epoch)
	}
	return nil
}

// orphaned is the condition on runs whose executing term is over at $N
// (the placeholder is spliced in by the caller).
func orphaned(at string) string {
	return `NOT EXISTS (SELECT 1 FROM replicas p WHERE p.id = runs.lease_owner AND p.epoch = runs.lease_epoch AND p.alive_until >= ` + at + `)`
}

// OrphanedRuns lists executing runs whose term is over; the partial index
// runs_by_executor holds just the executing runs.
func (s *Store) OrphanedRuns(ctx context.Context, at time.Time, limit int) ([]chat.Run, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+runCols+` FROM runs
		WHERE status IN ('queued', 'running') AND `+orphaned("$1")+` ORDER BY created_at, id LIMIT $2`, ms(at), limit)
	if err != nil {
		return nil, fmt.Errorf("orphaned runs: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, collectRun)
	if err != nil {
		return nil, fmt.Errorf("orphaned runs: %w", interpretError(err))
	}
	return out, nil
}

// TakeOverRun makes a term the executor of an orphaned run with one
// conditional UPDATE: the row lock orders racing takers, and a loser's
// re-check finds the run held by the winner's live term.
func (s *Store) TakeOverRun(ctx context.Context, p store.TakeOverRunParams) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE runs SET lease_owner = $3, lease_epoch = $4
		WHERE id = $1 AND tenant = $2 AND status IN `+activeStatuses+`
		AND ((lease_owner = $3 AND lease_epoch = $4) OR `+orphaned("$5")+`)`,
		p.RunID, p.Tenant, p.Owner, p.Epoch, ms(p.Now))
	if err != nil {
		return false, fmt.Errorf("take over run %s: %w", p.RunID, interpretError(err))
	}
	return tag.RowsAffected() == 1, nil
}

// ReserveSeqs raises a run's reserved seqs.
func (s *Store) ReserveSeqs(ctx context.Context, tenant, runID string, upTo int64) error {
	if _, err := s.pool.Exec(ctx, `UPDATE runs SET seq_reserved = GREATEST(seq_reserved, $3) WHERE id = $1 AND tenant = $2`, runID, tenant, upTo); err != nil {
		return fmt.Errorf("reserve seqs of %s: %w", runID, interpretError(err))
	}
	return nil
}

// CancelRequests lists a term's executing runs that were asked to stop.
func (s *Store) CancelRequests(ctx context.Context, owner string, epoch int64) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM runs WHERE lease_owner = $1 AND lease_epoch = $2 AND status IN ('queued', 'running') AND cancel_requested`,
		owner, epoch)
	if err != nil {
		return nil, fmt.Errorf("cancel requests: %w", interpretError(err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("cancel requests: %w", interpretError(err))
	}
	return ids, nil
}

// EndConfirmations cancels a run's pending confirmations.
func (s *Store) EndConfirmations(ctx context.Context, tenant, runID string, at time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE confirmations SET status = 'cancelled', decided_at = $3, applied_at = $3
		WHERE run_id = $1 AND tenant = $2 AND status = 'pending'`, runID, tenant, ms(at))
	if err != nil {
		return 0, fmt.Errorf("end confirmations of %s: %w", runID, interpretError(err))
	}
	return int(tag.RowsAffected()), nil
}
