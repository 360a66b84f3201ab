package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// RegisterReplica begins a new term of replica id.
func (s *Store) RegisterReplica(ctx context.Context, id string, until time.Time, sole bool) (int64, error) {
	var epoch int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if sole {
			if _, err := tx.ExecContext(ctx, `UPDATE replicas SET alive_until = 0 WHERE id <> ?`, id); err != nil {
				return err
			}
		}
		return tx.QueryRowContext(ctx, `INSERT INTO replicas (id, epoch, alive_until) VALUES (?, 1, ?)
			ON CONFLICT (id) DO UPDATE SET epoch = replicas.epoch + 1, alive_until = excluded.alive_until
			RETURNING epoch`, id, ms(until)).Scan(&epoch)
	})
	if err != nil {
		return 0, fmt.Errorf("register replica %s: %w", id, interpret(err))
	}
	return epoch, nil
}

// RenewReplica extends a term that is still alive.
func (s *Store) RenewReplica(ctx context.Context, id string, epoch int64, at, until time.Time) error {
	res, err := s.write.ExecContext(ctx, `UPDATE replicas SET alive_until = ? WHERE id = ? AND epoch = ? AND alive_until >= ?`,
		ms(until), id, epoch, ms(at))
	if err != nil {
		return fmt.Errorf("renew replica %s: %w", id, interpret(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("renew replica %s: %w: term %d is over", id, store.ErrConflict, epoch)
	}
	return nil
}

// orphaned is the condition on runs whose executing term is over at ?.
const orphaned = `NOT EXISTS (SELECT 1 FROM replicas p WHERE p.id = runs.lease_owner AND p.epoch = runs.lease_epoch AND p.alive_until >= ?)`

// OrphanedRuns lists executing runs whose term is over.
func (s *Store) OrphanedRuns(ctx context.Context, at time.Time, limit int) ([]chat.Run, error) {
	out, err := collect(scanRun)(s.read.QueryContext(ctx, `SELECT `+runCols+` FROM runs
		WHERE status IN ('queued','running') AND `+orphaned+` ORDER BY created_at, id LIMIT ?`, ms(at), limit))
	if err != nil {
		return nil, fmt.Errorf("orphaned runs: %w", err)
	}
	return out, nil
}

// TakeOverRun makes a term the executor of an orphaned run. SQLite's one
// writer makes the conditional UPDATE the compare-and-set.
func (s *Store) TakeOverRun(ctx context.Context, p store.TakeOverRunParams) (bool, error) {
	res, err := s.write.ExecContext(ctx, `UPDATE runs SET lease_owner = ?, lease_epoch = ?
		WHERE id = ? AND tenant = ? AND status IN ('queued','running','awaiting_input')
		AND ((lease_owner = ? AND lease_epoch = ?) OR `+orphaned+`)`,
		p.Owner, p.Epoch, p.RunID, p.Tenant, p.Owner, p.Epoch, ms(p.Now))
	if err != nil {
		return false, fmt.Errorf("take over run %s: %w", p.RunID, interpret(err))
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// ReserveSeqs raises a run's reserved seqs.
func (s *Store) ReserveSeqs(ctx context.Context, tenant, runID string, upTo int64) error {
	if _, err := s.write.ExecContext(ctx, `UPDATE runs SET seq_reserved = max(seq_reserved, ?) WHERE id = ? AND tenant = ?`, upTo, runID, tenant); err != nil {
		return fmt.Errorf("reserve seqs of %s: %w", runID, interpret(err))
	}
	return nil
}

// CancelRequests lists a term's executing runs that were asked to stop.
func (s *Store) CancelRequests(ctx context.Context, owner string, epoch int64) ([]string, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT id FROM runs WHERE lease_owner = ? AND lease_epoch = ? AND status IN ('queued','running') AND cancel_requested`,
		owner, epoch)
	if err != nil {
		return nil, fmt.Errorf("cancel requests: %w", interpret(err))
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("cancel requests: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cancel requests: %w", err)
	}
	return ids, nil
}

// EndConfirmations cancels a run's pending confirmations.
func (s *Store) EndConfirmations(ctx context.Context, tenant, runID string, at time.Time) (int, error) {
	res, err := s.write.ExecContext(ctx, `UPDATE confirmations SET status = 'cancelled', decided_at = ?, applied_at = ?
		WHERE run_id = ? AND tenant = ? AND status = 'pending'`, ms(at), ms(at), runID, tenant)
	if err != nil {
		return 0, fmt.Errorf("end confirmations of %s: %w", runID, interpret(err))
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
