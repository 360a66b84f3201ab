package sqlitestore

import (
	"database/sql"
	"path/filepath"
	"testing"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// The page caches are bounded as Open says: 16 MiB for the write
// connection, 2 MiB for each read connection (cache_size in KiB when
// negative), 256 KiB for the checkpointer's, so their sum is known from the
// number of connections.
func TestPageCacheSizes(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "agentchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []struct {
		name string
		db   *sql.DB
		want int64
	}{{"write", s.write, -16384}, {"read", s.read, -2048}, {"checkpoint", s.ckpt.db, -256}} {
		// Hold every connection of the pool, so that each is asked once.
		n := p.db.Stats().MaxOpenConnections
		for i := range n {
			c, err := p.db.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var got int64
			if err := c.QueryRowContext(t.Context(), "PRAGMA cache_size").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != p.want {
				t.Errorf("%s connection %d of %d: cache_size %d, want %d", p.name, i+1, n, got, p.want)
			}
		}
	}
}

// The page caches take their pages from the process's pool (pagepool.go):
// it was given before SQLite started, and a store's pages come from it.
func TestPagePool(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "agentchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if pagePool.err != nil {
		t.Fatalf("the page pool was not set up: %v", pagePool.err)
	}
	if want := poolCacheKiB * 1024 / pageSize; pagePool.slots != want || pagePool.size <= pageSize {
		t.Fatalf("the pool has %d slots of %d bytes, want %d of more than %d", pagePool.slots, pagePool.size, want, pageSize)
	}
	if _, err := s.write.ExecContext(t.Context(), `CREATE TABLE pooled (v BLOB)`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.write.ExecContext(t.Context(), `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50) INSERT INTO pooled SELECT randomblob(1000) FROM n`); err != nil {
		t.Fatal(err)
	}
	tls := libc.NewTLS()
	defer tls.Close()
	cur := tls.Alloc(16)
	defer tls.Free(16)
	if rc := sqlite3.Xsqlite3_status64(tls, sqlite3.SQLITE_STATUS_PAGECACHE_USED, cur, cur+8, 0); rc != sqlite3.SQLITE_OK {
		t.Fatalf("sqlite3_status64: %d", rc)
	}
	if used := *(*int64)(unsafe.Add(nil, cur)); used <= 0 {
		t.Fatalf("%d pages of the pool in use after writes, want some", used)
	}
}
