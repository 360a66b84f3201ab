package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
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

	// exec and queryRow keep the transaction copies (Tx.StmtContext) of
	// the statements they ran in the write pool's current transaction, so
	// that each is made once per transaction rather than once per
	// statement run: a copy takes the pool's lock and registers itself
	// with the statement and the transaction, and the transaction closes
	// each copy when it ends; a group of a few hundred chats' writes made
	// thousands (docs/benchmarks.md, "eleventh round"). The write pool is
	// one connection, so it has one transaction at a time; a new one
	// drops the copies of the last, which ended with it (keeping the
	// ended transaction referenced until then, so that a new one is never
	// mistaken for it).
	mu    sync.Mutex
	curTx *sql.Tx
	inTx  map[string]*sql.Stmt
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

// txStmt is query prepared in tx, made once per transaction for the hot
// statements (the copy is the transaction's: callers do not close it).
func (p *prepared) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	st, ok := p.m[query]
	if !ok {
		return tx.PrepareContext(ctx, query)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.curTx != tx {
		p.curTx = tx
		clear(p.inTx)
	} else if c, ok := p.inTx[query]; ok {
		return c, nil
	}
	if p.inTx == nil {
		p.inTx = make(map[string]*sql.Stmt, len(p.m))
	}
	c := tx.StmtContext(ctx, st)
	if ctx.Err() == nil { // else c may carry ctx's error: not the transaction's copy
		p.inTx[query] = c
	}
	return c, nil
}

// exec runs query in tx as a prepared statement.
func (p *prepared) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := p.txStmt(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// queryRow runs query in tx as a prepared statement.
func (p *prepared) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) scanner {
	st, err := p.txStmt(ctx, tx, query)
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
