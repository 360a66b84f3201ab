package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

const fileCols = `id, tenant, owner, name, media_type, size, sha256, created_at, referenced_at`

func scanFile(row pgx.Row) (store.File, error) {
	var f store.File
	err := row.Scan(&f.ID, &f.Tenant, &f.Owner, &f.Name, &f.MediaType, &f.Size, &f.SHA256, &f.CreatedAt, &f.ReferencedAt)
	f.CreatedAt, f.ReferencedAt = f.CreatedAt.UTC(), utc(f.ReferencedAt)
	return f, err
}

func collectFile(row pgx.CollectableRow) (store.File, error) { return scanFile(row) }

// CreateFile stores a file's record.
func (s *Store) CreateFile(ctx context.Context, sc chat.Scope, f store.File) (store.File, error) {
	store.FillFile(&f, sc, now())
	f.ReferencedAt = nil
	_, err := s.pool.Exec(ctx, `INSERT INTO files (`+fileCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL)`,
		f.ID, f.Tenant, f.Owner, f.Name, f.MediaType, f.Size, f.SHA256, f.CreatedAt)
	if err != nil {
		return store.File{}, fmt.Errorf("create file: %w", interpretError(err))
	}
	return f, nil
}

// GetFile reads one of the principal's files.
func (s *Store) GetFile(ctx context.Context, sc chat.Scope, id string) (store.File, error) {
	f, err := scanFile(s.pool.QueryRow(ctx, `SELECT `+fileCols+` FROM files WHERE id = $1 AND tenant = $2 AND owner = $3`, id, sc.Tenant, sc.User))
	if err != nil {
		return store.File{}, fmt.Errorf("get file %s: %w", id, interpretError(err))
	}
	return f, nil
}

// ListFiles pages the principal's files, newest first.
func (s *Store) ListFiles(ctx context.Context, sc chat.Scope, p store.Page) ([]store.File, string, error) {
	q := `SELECT ` + fileCols + ` FROM files WHERE tenant = $1 AND owner = $2`
	return keysetPage(q, []any{sc.Tenant, sc.User}, "created_at", true, p, func(f store.File) store.Cursor { return store.Cursor{At: f.CreatedAt, ID: f.ID} },
		func(q string, args []any) ([]store.File, error) {
			rows, _ := s.pool.Query(ctx, q, args...)
			out, err := pgx.CollectRows(rows, collectFile)
			if err != nil {
				return nil, fmt.Errorf("list files: %w", interpretError(err))
			}
			return out, nil
		})
}

// DeleteFile removes one of the principal's files' record.
func (s *Store) DeleteFile(ctx context.Context, sc chat.Scope, id string) (store.File, error) {
	f, err := scanFile(s.pool.QueryRow(ctx, `DELETE FROM files WHERE id = $1 AND tenant = $2 AND owner = $3 RETURNING `+fileCols, id, sc.Tenant, sc.User))
	if err != nil {
		return store.File{}, fmt.Errorf("delete file %s: %w", id, interpretError(err))
	}
	return f, nil
}

// TenantFileBytes sums the sizes of the tenant's files.
func (s *Store) TenantFileBytes(ctx context.Context, tenant string) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(SUM(size), 0)::bigint FROM files WHERE tenant = $1`, tenant).Scan(&n); err != nil {
		return 0, fmt.Errorf("tenant file bytes: %w", interpretError(err))
	}
	return n, nil
}

// ReferenceFiles records a conversation's references to the principal's files.
func (s *Store) ReferenceFiles(ctx context.Context, sc chat.Scope, conversationID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	at := now()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM conversations WHERE id = $1 AND tenant = $2 AND owner = $3`, conversationID, sc.Tenant, sc.User).Scan(&one); err != nil {
			return fmt.Errorf("conversation %s: %w", conversationID, interpretError(err))
		}
		// Lock the files in the sweep's order (SweepFiles): a reference
		// and a sweep each waiting on the other's rows would deadlock.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM files WHERE id = ANY($1) AND tenant = $2 AND owner = $3 ORDER BY created_at, id FOR UPDATE`, ids, sc.Tenant, sc.User); err != nil {
			return err
		}
		for _, id := range ids {
			tag, err := tx.Exec(ctx, `UPDATE files SET referenced_at = COALESCE(referenced_at, $1) WHERE id = $2 AND tenant = $3 AND owner = $4`, at, id, sc.Tenant, sc.User)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return fmt.Errorf("file %s: %w", id, store.ErrNotFound)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO file_refs (file_id, conversation_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, id, conversationID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reference files: %w", interpretError(err))
	}
	return nil
}

// SweepFiles deletes unreferenced files' records. It waits for a row
// another sweep has locked rather than skipping it (SKIP LOCKED): the
// skipping sweep returned while the other had not yet committed, so a
// conversation's delete answered with its files still readable. Sweeps
// and ReferenceFiles lock files in one order (created_at, id), so none
// deadlocks with another; a row another sweep deleted is passed over.
func (s *Store) SweepFiles(ctx context.Context, unreferencedBefore time.Time, limit int) ([]store.File, error) {
	rows, _ := s.pool.Query(ctx, `DELETE FROM files WHERE id IN (
		SELECT f.id FROM files f WHERE NOT EXISTS (SELECT 1 FROM file_refs r WHERE r.file_id = f.id)
		AND (f.referenced_at IS NOT NULL OR f.created_at < $1) ORDER BY f.created_at, f.id LIMIT $2 FOR UPDATE) RETURNING `+fileCols,
		ms(unreferencedBefore), limit)
	out, err := pgx.CollectRows(rows, collectFile)
	if err != nil {
		return nil, fmt.Errorf("sweep files: %w", interpretError(err))
	}
	return out, nil
}

// FileContentInUse reports whether a record has the content address.
func (s *Store) FileContentInUse(ctx context.Context, sha256 string) (bool, error) {
	var in bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM files WHERE sha256 = $1)`, strings.ToLower(sha256)).Scan(&in); err != nil {
		return false, fmt.Errorf("file content in use: %w", interpretError(err))
	}
	return in, nil
}
