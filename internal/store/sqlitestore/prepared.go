package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// prepared keeps a pool's hot statements prepared: SQLite parsing a
// statement anew on each call was a quarter of the writer's CPU (the profile
// of BenchmarkStartRuns) and 9 % of the server's at 1000 streams.
//
// The write pool is one connection, so a statement prepared on the pool is
// prepared on that connection, and a transaction's Tx.StmtContext reuses
// it. They are prepared when the store opens: preparing on the pool needs
// its connection, which a transaction holds. A query not prepared then is
// prepared in its transaction, each time.
//
// On the read pool, database/sql prepares a statement on each connection the
// first time it runs there and keeps it, as the connections are kept
// (keepOpen); row and rows run a query not prepared as a plain query.
type prepared struct {
	db *sql.DB
	m  map[string]*sql.Stmt // read-only once built
}

// hotReads are the read pool's statements prepared when the store opens:
// those every run makes (its end looks for the conversation's queued
// inputs: parsing that look and the active run's read, which it replaced,
// was a tenth of the server's CPU at a few hundred short chats a second).
var hotReads = []string{searchKnowledgeSQL, latestCompactionSQL, activeRunReadSQL, queuedTakeableSQL}

// prepareAll prepares queries on db.
func prepareAll(ctx context.Context, db *sql.DB, queries []string) (*prepared, error) {
	p := &prepared{db: db, m: make(map[string]*sql.Stmt, len(queries))}
	for _, q := range queries {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			p.close()
			return nil, fmt.Errorf("prepare %q: %w", q, err)
		}
		p.m[q] = st
	}
	return p, nil
}

// stmt is query prepared in tx.
func (p *prepared) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if st, ok := p.m[query]; ok {
		return tx.StmtContext(ctx, st), nil
	}
	return tx.PrepareContext(ctx, query)
}

// exec runs query in tx as a prepared statement.
func (p *prepared) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := p.stmt(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// queryRow runs query in tx as a prepared statement. The row's Scan closes
// the statement's transaction copy.
func (p *prepared) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) scanner {
	st, err := p.stmt(ctx, tx, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// row runs query on the pool, prepared.
func (p *prepared) row(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := p.m[query]; ok {
		return st.QueryRowContext(ctx, args...)
	}
	return p.db.QueryRowContext(ctx, query, args...)
}

// rows runs query on the pool, prepared.
func (p *prepared) rows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, ok := p.m[query]; ok {
		return st.QueryContext(ctx, args...)
	}
	return p.db.QueryContext(ctx, query, args...)
}

// close closes every cached statement.
func (p *prepared) close() error {
	if p == nil {
		return nil
	}
	var errs []error
	for _, st := range p.m {
		errs = append(errs, st.Close())
	}
	p.m = nil
	return errors.Join(errs...)
}

// errRow is the error of preparing a row's statement.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
