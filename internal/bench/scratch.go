package bench

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// A bench run keeps what it writes to shared servers to itself and removes
// it at the end, so that runs in a series do not pay for each other's rows
// and keys, and a Redis that CI uses next is left as it was found: a
// thousand streams of 200 tokens leave ~80 MB of streams, kept 24 h.

// scratchSchema gives a PostgreSQL store URL the run's own schema: the URL
// with schema=name added, and a drop that removes the schema and everything
// in it. A URL that names its schema (schema or search_path) is the
// caller's to keep and is returned as it is, with a drop that does nothing;
// so is a store that is not a postgres:// URL (SQLite, a key/value DSN).
func scratchSchema(raw, name string) (storeURL string, drop func(context.Context) error) {
	keep := func(context.Context) error { return nil }
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return raw, keep
	}
	q := u.Query()
	if q.Has("schema") || q.Has("search_path") || strings.Contains(q.Get("options"), "search_path") {
		return raw, keep
	}
	base := raw
	q.Set("schema", name)
	u.RawQuery = q.Encode()
	return u.String(), func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		// Parsed as the servers parse it: pgxpool's pool_* parameters are
		// not PostgreSQL's, which would refuse them at connect.
		cfg, err := pgxpool.ParseConfig(base)
		if err != nil {
			return fmt.Errorf("drop schema %s: invalid database url", name) // the URL may hold a password
		}
		conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
		if err != nil {
			return fmt.Errorf("drop schema %s: %w", name, err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			return fmt.Errorf("drop schema %s: %w", name, err)
		}
		return nil
	}
}

// deleteKeys unlinks every key under prefix (its keys are "<prefix>:…") in
// the Redis at busURL, with SCAN rather than KEYS so that a Redis holding
// other data is not blocked while it looks, and reports how many it
// unlinked. A bus that is not a redis:// URL, or no prefix (the
// deployments' default would be someone else's keys), deletes nothing.
func deleteKeys(ctx context.Context, busURL, prefix string) (int, error) {
	if prefix == "" || !(strings.HasPrefix(busURL, "redis://") || strings.HasPrefix(busURL, "rediss://")) {
		return 0, nil
	}
	opts, err := redis.ParseURL(busURL)
	if err != nil {
		return 0, errors.New("delete bus keys: invalid redis url") // the URL may hold a password
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	n := 0
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := rdb.Unlink(ctx, batch...).Err()
		n, batch = n+len(batch), batch[:0]
		return err
	}
	it := rdb.Scan(ctx, 0, globEscape(prefix)+":*", 1000).Iterator()
	for it.Next(ctx) {
		batch = append(batch, it.Val())
		if len(batch) == 500 {
			if err := flush(); err != nil {
				return n, fmt.Errorf("delete bus keys: %w", err)
			}
		}
	}
	if err := errors.Join(it.Err(), flush()); err != nil {
		return n, fmt.Errorf("delete bus keys: %w", err)
	}
	return n, nil
}

// globEscape quotes the characters a Redis MATCH pattern treats as special.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(s)
}
