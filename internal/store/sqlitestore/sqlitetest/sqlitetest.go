// Package sqlitetest gives tests an empty SQLite store without migrating a
// new file each time. Migrating one costs about 0.4 CPU-s under -race
// (modernc's SQLite is Go, all of it instrumented), and the suites start
// hundreds of stores. The migrations themselves are tested in package
// sqlitestore.
package sqlitetest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentchat/agentchat/internal/store/sqlitestore"
)

// migrated is an empty database with every migration applied, made once
// per test process.
var migrated = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "sqlitetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agentchat.db")
	if err := sqlitestore.Migrate(context.Background(), path); err != nil {
		return nil, err
	}
	// Closed, the database is whole in its file: the last connection
	// checkpointed the write-ahead log and removed it.
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sqlitetest: the migrated database left a write-ahead log (%v)", err)
	}
	return os.ReadFile(path)
})

// Path writes a copy of the migrated empty database to a new file in one of
// t's temporary directories and returns its path. sqlitestore.Open on it
// finds every migration applied, as on a restart, and does the rest of its
// work as on a new file.
func Path(t testing.TB) string {
	t.Helper()
	db, err := migrated()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agentchat.db")
	if err := os.WriteFile(path, db, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
