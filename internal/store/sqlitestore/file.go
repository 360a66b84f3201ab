package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

const fileCols = `id, tenant, owner, name, media_type, size, sha256, created_at, referenced_at`

func scanFile(row scanner) (store.File, error) {
	var f store.File
	var created int64
	var referenced sql.NullInt64
	err := row.Scan(&f.ID, &f.Tenant, &f.Owner, &f.Name, &f.MediaType, &f.Size, &f.SHA256, &created, &referenced)
	f.CreatedAt, f.ReferencedAt = fromMS(created), optTime(referenced)
	return f, err
}

// CreateFile stores a file's record.
func (s *Store) CreateFile(ctx context.Context, sc chat.Scope, f store.File) (store.File, error) {
	store.FillFile(&f, sc, now())
	f.ReferencedAt = nil
	_, err := s.write.ExecContext(ctx, `INSERT INTO files (`+fileCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
		f.ID, f.Tenant, f.Owner, f.Name, f.MediaType, f.Size, f.SHA256, ms(f.CreatedAt))
	if err != nil {
		return store.File{}, fmt.Errorf("create file: %w", interpret(err))
	}
	return f, nil
}

// GetFile reads one of the principal's files.
func (s *Store) GetFile(ctx context.Context, sc chat.Scope, id string) (store.File, error) {
	f, err := scanFile(s.read.QueryRowContext(ctx, `SELECT `+fileCols+` FROM files WHERE id = ? AND tenant = ? AND owner = ?`, id, sc.Tenant, sc.User))
	if err != nil {
		return store.File{}, fmt.Errorf("get file %s: %w", id, interpret(err))
	}
	return f, nil
}

// ListFiles pages the principal's files, newest first.
func (s *Store) ListFiles(ctx context.Context, sc chat.Scope, p store.Page) ([]store.File, string, error) {
	q := `SELECT ` + fileCols + ` FROM files WHERE tenant = ? AND owner = ?`
	return keysetPage(q, []any{sc.Tenant, sc.User}, "created_at", true, p, func(f store.File) store.Cursor { return store.Cursor{At: f.CreatedAt, ID: f.ID} },
		func(q string, args []any) ([]store.File, error) {
			out, err := collect(scanFile)(s.read.QueryContext(ctx, q, args...))
			if err != nil {
				return nil, fmt.Errorf("list files: %w", err)
			}
			return out, nil
		})
}

// DeleteFile removes one of the principal's files' record.
func (s *Store) DeleteFile(ctx context.Context, sc chat.Scope, id string) (store.File, error) {
	f, err := scanFile(s.write.QueryRowContext(ctx, `DELETE FROM files WHERE id = ? AND tenant = ? AND owner = ? RETURNING `+fileCols, id, sc.Tenant, sc.User))
	if err != nil {
		return store.File{}, fmt.Errorf("delete file %s: %w", id, interpret(err))
	}
	return f, nil
}

// TenantFileBytes sums the sizes of the tenant's files.
func (s *Store) TenantFileBytes(ctx context.Context, tenant string) (int64, error) {
	var n int64
	if err := s.read.QueryRowContext(ctx, `SELECT COALESCE(SUM(size), 0) FROM files WHERE tenant = ?`, tenant).Scan(&n); err != nil {
		return 0, fmt.Errorf("tenant file bytes: %w", interpret(err))
	}
	return n, nil
}

// ReferenceFiles records a conversation's references to the principal's files.
func (s *Store) ReferenceFiles(ctx context.Context, sc chat.Scope, conversationID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	at := ms(now())
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM conversations WHERE id = ? AND tenant = ? AND owner = ?`, conversationID, sc.Tenant, sc.User).Scan(&one); err != nil {
			return fmt.Errorf("conversation %s: %w", conversationID, interpret(err))
		}
		for _, id := range ids {
			res, err := tx.ExecContext(ctx, `UPDATE files SET referenced_at = COALESCE(referenced_at, ?) WHERE id = ? AND tenant = ? AND owner = ?`, at, id, sc.Tenant, sc.User)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("file %s: %w", id, store.ErrNotFound)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO file_refs (file_id, conversation_id) VALUES (?, ?) ON CONFLICT DO NOTHING`, id, conversationID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reference files: %w", err)
	}
	return nil
}

// SweepFiles deletes unreferenced files' records.
func (s *Store) SweepFiles(ctx context.Context, unreferencedBefore time.Time, limit int) ([]store.File, error) {
	out, err := collect(scanFile)(s.write.QueryContext(ctx, `DELETE FROM files WHERE id IN (
		SELECT f.id FROM files f WHERE NOT EXISTS (SELECT 1 FROM file_refs r WHERE r.file_id = f.id)
		AND (f.referenced_at IS NOT NULL OR f.created_at < ?) ORDER BY f.created_at LIMIT ?) RETURNING `+fileCols,
		ms(unreferencedBefore), limit))
	if err != nil {
		return nil, fmt.Errorf("sweep files: %w", err)
	}
	return out, nil
}

// FileContentInUse reports whether a record has the content address.
func (s *Store) FileContentInUse(ctx context.Context, sha256 string) (bool, error) {
	var n int
	if err := s.read.QueryRowContext(ctx, `SELECT count(*) FROM files WHERE sha256 = ?`, strings.ToLower(sha256)).Scan(&n); err != nil {
		return false, fmt.Errorf("file content in use: %w", interpret(err))
	}
	return n > 0, nil
}
