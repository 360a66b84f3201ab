package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/config"
	"github.com/agentchat/agentchat/internal/file/filetest"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/pgstore"
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
	"github.com/agentchat/agentchat/internal/testenv"
)

// serve puts uploaded files where the settings say: each case loads the
// settings as serve does, opens the file service, uploads, and finds the
// bytes in that backend (and only there).
func TestFileStorageSelection(t *testing.T) {
	t.Parallel()
	body := []byte("bytes that must land in the chosen backend")
	key := filetest.Key(body)
	upload := func(t *testing.T, vars map[string]string, st store.Store) {
		t.Helper()
		cfg, err := config.Load("serve", nil, func(k string) string { return vars[k] }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		svc, closeFiles, err := openFiles(t.Context(), cfg, st, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(closeFiles)
		f, err := svc.CreateBytes(t.Context(), chat.Scope{Tenant: "acme", User: "alice"}, "notes.txt", body)
		if err != nil {
			t.Fatal(err)
		}
		if f.SHA256 != key {
			t.Fatalf("stored under %s, want %s", f.SHA256, key)
		}
	}
	sqlite := func(t *testing.T, dir string) store.Store {
		st, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "agentchat.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	onDisk := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, "files", key[:2], key))
		return err == nil
	}

	t.Run("disk", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		upload(t, map[string]string{"AGENTCHAT_DATA_DIR": dir}, sqlite(t, dir))
		if !onDisk(dir) {
			t.Fatal("not under the data directory's files/")
		}
	})

	t.Run("s3", func(t *testing.T) {
		t.Parallel()
		backend := s3mem.New()
		srv := httptest.NewServer(gofakes3.New(backend).Server())
		t.Cleanup(srv.Close)
		if err := backend.CreateBucket("uploads"); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		upload(t, map[string]string{"AGENTCHAT_DATA_DIR": dir, "AGENTCHAT_S3_BUCKET": "uploads", "AGENTCHAT_S3_ENDPOINT": srv.URL,
			"AGENTCHAT_S3_PATH_STYLE": "true", "AGENTCHAT_S3_PREFIX": "agentchat/", "AGENTCHAT_S3_REGION": "eu-west-1",
			"AGENTCHAT_S3_ACCESS_KEY_ID": "key", "AGENTCHAT_S3_SECRET_ACCESS_KEY": "secret"}, sqlite(t, dir))
		obj, err := backend.HeadObject("uploads", "agentchat/"+key)
		if err != nil || obj.Size != int64(len(body)) {
			t.Fatalf("not in the bucket under the prefix: %v", err)
		}
		if onDisk(dir) {
			t.Fatal("also on disk")
		}
	})

	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dbURL := testenv.Postgres(t)
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		schema := "agentchat_test_" + hex.EncodeToString(b)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if conn, err := pgx.Connect(ctx, dbURL); err == nil {
				_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
				_ = conn.Close(ctx)
			}
		})
		u, err := url.Parse(dbURL)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("schema", schema)
		u.RawQuery = q.Encode()
		st, err := pgstore.Open(t.Context(), u.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		dir := t.TempDir()
		// A PostgreSQL store and no bucket: the files go into the database.
		upload(t, map[string]string{"AGENTCHAT_DATA_DIR": dir, "AGENTCHAT_STORE": u.String()}, st)
		o, err := st.FileStorage().Open(t.Context(), key)
		if err != nil {
			t.Fatalf("not in the database: %v", err)
		}
		_ = o.Close()
		if onDisk(dir) {
			t.Fatal("also on disk")
		}
	})
}
