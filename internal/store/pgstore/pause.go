package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// PauseRun records a run's wait in one transaction. It locks the run's row
// first: a takeover or a claim racing it waits for the pause, and then finds
// it recorded (and the run's term changed under a pause waiting for the
// lock refuses it).
func (s *Store) PauseRun(ctx context.Context, p store.PauseRunParams) error {
	enc, err := p.Rows(now())
	if err != nil {
		return err
	}
	rows, usage, confs := enc.Events, enc.Usage, enc.Confirmations
	for i, c := range confs {
		confs[i] = asStored(c)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status, owner, thread string
		var epoch int64
		if err := tx.QueryRow(ctx, `SELECT status, lease_owner, lease_epoch, conversation_id FROM runs WHERE id = $1 AND tenant = $2 FOR UPDATE`,
			p.RunID, p.Tenant).Scan(&status, &owner, &epoch, &thread); err != nil {
			return err
		}
		if status != chat.RunRunning || owner != p.Owner || epoch != p.Epoch {
			return fmt.Errorf("%w: run %s is %s, executed by %s/%d", store.ErrConflict, p.RunID, status, owner, epoch)
		}
		// An earlier attempt recorded it if its first confirmation, or else
		// its first event's seq, is stored: the run is still this term's and
		// the log held everything before the pause's events.
		recorded := false
		switch {
		case len(confs) > 0:
			err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM confirmations WHERE id = $1)`, confs[0].ID).Scan(&recorded)
		case len(p.Events) > 0:
			var last int64
			err = tx.QueryRow(ctx, lastSeqSQL, thread, p.Tenant).Scan(&last)
			recorded = last >= p.Events[0].Seq
		}
		if err != nil || recorded {
			return err
		}
		for _, c := range confs {
			if err := insertConfirmation(ctx, tx, c); err != nil {
				return err
			}
		}
		if len(rows) > 0 {
			if err := insertEventRows(ctx, tx, rows); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE runs SET state = $2::json, usage = $3::json WHERE id = $1`, p.RunID, nullJSON(p.State), usage)
		return err
	})
	if err != nil {
		return fmt.Errorf("pause run %s: %w", p.RunID, interpretError(err))
	}
	return nil
}
