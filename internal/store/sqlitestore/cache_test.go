package sqlitestore

import (
	"database/sql"
	"path/filepath"
	"testing"
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
