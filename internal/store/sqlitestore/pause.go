package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// PauseRun records a run's wait in one transaction (SQLite's one writer
// orders it with any takeover or claim).
func (s *Store) PauseRun(ctx context.Context, p store.PauseRunParams) error {
	enc, err := p.Rows(now())
	if err != nil {
		return err
	}
	rows, usage, confs := enc.Events, enc.Usage, enc.Confirmations
	var numbered map[string]threadNumber
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var status, owner, thread string
		var epoch int64
		if err := tx.QueryRowContext(ctx, `SELECT status, lease_owner, lease_epoch, conversation_id FROM runs WHERE id = ? AND tenant = ?`,
			p.RunID, p.Tenant).Scan(&status, &owner, &epoch, &thread); err != nil {
			return err
		}
		if status != chat.RunRunning || owner != p.Owner || epoch != p.Epoch {
			return fmt.Errorf("%w: run %s is %s, executed by %s/%d", store.ErrConflict, p.RunID, status, owner, epoch)
		}
		recorded, err := pauseRecorded(ctx, tx, p.Tenant, thread, confs, p)
		if err != nil || recorded {
			return err
		}
		for _, c := range confs {
			if err := insertConfirmation(ctx, tx, c); err != nil {
				return err
			}
		}
		if numbered, err = s.insertEventRows(ctx, tx, rows); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET state = ?, usage = ? WHERE id = ?`, nullJSON(p.State), string(usage), p.RunID)
		return err
	})
	if err != nil {
		return fmt.Errorf("pause run %s: %w", p.RunID, err)
	}
	s.threads.settle(numbered, rows)
	return nil
}

// pauseRecorded reports whether an earlier attempt recorded this pause. The
// run is still its term's and the log held everything before the pause's
// events, so its first confirmation, or else its first event's seq, being
// stored can only be that attempt's doing.
func pauseRecorded(ctx context.Context, tx *sql.Tx, tenant, thread string, confs []chat.Confirmation, p store.PauseRunParams) (bool, error) {
	var n int64
	switch {
	case len(confs) > 0:
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM confirmations WHERE id = ?`, confs[0].ID).Scan(&n)
		return n > 0, err
	case len(p.Events) > 0:
		err := tx.QueryRowContext(ctx, lastSeqSQL, thread, tenant).Scan(&n)
		return n >= p.Events[0].Seq, err
	}
	return false, nil
}
