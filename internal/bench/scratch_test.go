package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/agentchat/agentchat/internal/testenv"
)

func randomName(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// A URL that names its schema, or is not a postgres:// URL, is the caller's:
// bench neither changes it nor drops anything.
func TestScratchSchemaKeepsTheCallers(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"",
		"file:/tmp/agentchat.db",
		"host=127.0.0.1 dbname=test",
		"postgres://u@h/db?schema=mine",
		"postgres://u@h/db?search_path=mine",
		"postgres://u@h/db?options=-c%20search_path%3Dmine",
	} {
		got, drop := scratchSchema(raw, "bench_x")
		if got != raw {
			t.Errorf("%q became %q", raw, got)
		}
		if err := drop(context.Background()); err != nil {
			t.Errorf("%q: drop: %v", raw, err)
		}
	}
}

// A PostgreSQL URL naming no schema gets the run's own, which the drop
// removes with what the servers created in it.
func TestScratchSchemaDropsItsSchema(t *testing.T) {
	t.Parallel()
	pg := testenv.Postgres(t)
	ctx := context.Background()
	name := randomName(t, "benchtest_")
	// A pool parameter, which PostgreSQL itself refuses, must not stop the drop.
	sep := "?"
	if strings.Contains(pg, "?") {
		sep = "&"
	}
	storeURL, drop := scratchSchema(pg+sep+"pool_max_conns=5", name)
	u, err := url.Parse(storeURL)
	if err != nil || u.Query().Get("schema") != name {
		t.Fatalf("store URL %q: want schema=%s added (%v)", storeURL, name, err)
	}
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{name}.Sanitize()+`; CREATE TABLE `+pgx.Identifier{name, "t"}.Sanitize()+` (x int)`); err != nil {
		t.Fatal(err)
	}
	if err := drop(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("schema %s is still there", name)
	}
}

// The run's keys go, and only they: a key of another prefix that starts
// with the run's stays.
func TestDeleteKeys(t *testing.T) {
	t.Parallel()
	rd := testenv.Redis(t)
	ctx := context.Background()
	opts, err := redis.ParseURL(rd)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() }) // after the deletion below: cleanups run last first
	prefix := randomName(t, "benchtest")
	mine := []string{prefix + ":{bench}:thread:a", prefix + ":{bench}:thread:b", prefix + ":x"}
	others := []string{prefix + "0:{bench}:thread:a", prefix + "x", "x" + prefix + ":y"}
	for _, k := range append(append([]string{}, mine...), others...) {
		if err := rdb.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if err := rdb.Del(context.Background(), others...).Err(); err != nil {
			t.Errorf("delete the test's keys: %v", err)
		}
	})
	n, err := deleteKeys(ctx, rd, prefix)
	if err != nil || n != len(mine) {
		t.Fatalf("deleted %d keys (%v), want %d", n, err, len(mine))
	}
	if left, err := rdb.Exists(ctx, mine...).Result(); err != nil || left != 0 {
		t.Fatalf("%d of the run's keys left (%v)", left, err)
	}
	if left, err := rdb.Exists(ctx, others...).Result(); err != nil || left != int64(len(others)) {
		t.Fatalf("%d of %d other keys left (%v)", left, len(others), err)
	}
	// No prefix, or a bus that is not Redis: nothing is deleted.
	for _, c := range []struct{ bus, prefix string }{{rd, ""}, {"", prefix}, {"memory", prefix}} {
		if n, err := deleteKeys(ctx, c.bus, c.prefix); n != 0 || err != nil {
			t.Errorf("deleteKeys(%q, %q) = %d, %v", c.bus, c.prefix, n, err)
		}
	}
}
