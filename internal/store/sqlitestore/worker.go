package sqlitestore

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"

	"modernc.org/sqlite"
)

// The pure-Go SQLite driver runs SQLite's C code translated to Go, whose
// frames are large: one query grows the calling goroutine's stack from
// 2 KiB to 16-32 KiB, and the runtime gives that back only by halving it
// once per garbage collection. The callers are a stream's own goroutines
// (the HTTP handler that starts a run and then serves its stream for
// minutes or hours, the run's goroutine), so every stream carried one or
// two grown stacks: at 1000 streams ~18 KiB per goroutine, as much memory
// as the live heap (issue 25, fourth round, in docs/benchmarks.md).
//
// So each connection runs its driver calls on a goroutine of its own: the
// grown stacks are one per connection, a few in all, and the callers' stay
// small. A call costs a hand-off to the connection's goroutine and back
// (about a microsecond), a handful per run and one per event logged.

// workerConnector opens connections that run their calls on their own
// goroutine.
type workerConnector struct{ driver.Connector }

func newWorkerConnector(dsn string) (driver.Connector, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return workerConnector{c}, nil
}

func (c workerConnector) Connect(ctx context.Context) (driver.Conn, error) {
	w := &worker{calls: make(chan func()), done: make(chan struct{})}
	go w.loop()
	var conn driver.Conn
	var err error
	w.do(func() { conn, err = c.Connector.Connect(ctx) })
	if err != nil {
		w.stop()
		return nil, err
	}
	return &workerConn{w: w, c: conn}, nil
}

// worker is the goroutine one connection's calls run on.
type worker struct {
	mu    sync.Mutex // one call at a time: database/sql may close rows from another goroutine
	calls chan func()
	done  chan struct{}
}

func (w *worker) loop() {
	for f := range w.calls {
		f()
		w.done <- struct{}{}
	}
}

// do runs f on the worker's goroutine and waits for it. The driver itself
// watches the call's context (it interrupts SQLite), so do always waits.
func (w *worker) do(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls <- f
	<-w.done
}

func (w *worker) stop() { close(w.calls) }

// The driver's interfaces database/sql uses, each forwarded to the worker.
// The driver's connection implements every one of them (modernc.org/sqlite
// conn.go); the legacy context-free forms are left out, as database/sql
// prefers the context forms where a connection has them.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

var errNotSQLiteConn = errors.New("sqlitestore: the driver's connection lacks an interface the store forwards")

type workerConn struct {
	w *worker
	c driver.Conn
}

func (c *workerConn) conn() (sqliteConn, error) {
	sc, ok := c.c.(sqliteConn)
	if !ok {
		return nil, errNotSQLiteConn
	}
	return sc, nil
}

func (c *workerConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *workerConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	sc, err := c.conn()
	if err != nil {
		return nil, err
	}
	var st driver.Stmt
	c.w.do(func() { st, err = sc.PrepareContext(ctx, query) })
	if err != nil {
		return nil, err
	}
	return &workerStmt{w: c.w, s: st}, nil
}

func (c *workerConn) Close() error {
	var err error
	c.w.do(func() { err = c.c.Close() })
	c.w.stop()
	return err
}

func (c *workerConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *workerConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	sc, err := c.conn()
	if err != nil {
		return nil, err
	}
	var tx driver.Tx
	c.w.do(func() { tx, err = sc.BeginTx(ctx, opts) })
	if err != nil {
		return nil, err
	}
	return &workerTx{w: c.w, t: tx}, nil
}

func (c *workerConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	sc, err := c.conn()
	if err != nil {
		return nil, err
	}
	var r driver.Result
	c.w.do(func() { r, err = sc.ExecContext(ctx, query, args) })
	return r, err // the driver's result holds values only: read anywhere
}

func (c *workerConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	sc, err := c.conn()
	if err != nil {
		return nil, err
	}
	var rows driver.Rows
	c.w.do(func() { rows, err = sc.QueryContext(ctx, query, args) })
	if err != nil {
		return nil, err
	}
	return &workerRows{w: c.w, r: rows}, nil
}

func (c *workerConn) Ping(ctx context.Context) error {
	sc, err := c.conn()
	if err != nil {
		return err
	}
	c.w.do(func() { err = sc.Ping(ctx) })
	return err
}

func (c *workerConn) ResetSession(ctx context.Context) error {
	sc, err := c.conn()
	if err != nil {
		return err
	}
	return sc.ResetSession(ctx) // a check of a field: no SQLite call
}

func (c *workerConn) IsValid() bool {
	sc, err := c.conn()
	return err == nil && sc.IsValid() // a check of a field: no SQLite call
}

type workerStmt struct {
	w *worker
	s driver.Stmt
}

func (s *workerStmt) Close() error {
	var err error
	s.w.do(func() { err = s.s.Close() })
	return err
}

func (s *workerStmt) NumInput() int {
	var n int
	s.w.do(func() { n = s.s.NumInput() })
	return n
}

// Exec and Query complete driver.Stmt; database/sql calls the context forms.
func (s *workerStmt) Exec(args []driver.Value) (driver.Result, error) {
	var r driver.Result
	var err error
	s.w.do(func() { r, err = s.s.Exec(args) })
	return r, err
}

func (s *workerStmt) Query(args []driver.Value) (driver.Rows, error) {
	var rows driver.Rows
	var err error
	s.w.do(func() { rows, err = s.s.Query(args) })
	if err != nil {
		return nil, err
	}
	return &workerRows{w: s.w, r: rows}, nil
}

func (s *workerStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	sc, ok := s.s.(driver.StmtExecContext)
	if !ok {
		return nil, errNotSQLiteConn
	}
	var r driver.Result
	var err error
	s.w.do(func() { r, err = sc.ExecContext(ctx, args) })
	return r, err
}

func (s *workerStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	sc, ok := s.s.(driver.StmtQueryContext)
	if !ok {
		return nil, errNotSQLiteConn
	}
	var rows driver.Rows
	var err error
	s.w.do(func() { rows, err = sc.QueryContext(ctx, args) })
	if err != nil {
		return nil, err
	}
	return &workerRows{w: s.w, r: rows}, nil
}

type workerTx struct {
	w *worker
	t driver.Tx
}

func (t *workerTx) Commit() error {
	var err error
	t.w.do(func() { err = t.t.Commit() })
	return err
}

func (t *workerTx) Rollback() error {
	var err error
	t.w.do(func() { err = t.t.Rollback() })
	return err
}

type workerRows struct {
	w *worker
	r driver.Rows
}

func (r *workerRows) Columns() []string {
	var c []string
	r.w.do(func() { c = r.r.Columns() })
	return c
}

func (r *workerRows) Close() error {
	var err error
	r.w.do(func() { err = r.r.Close() })
	return err
}

func (r *workerRows) Next(dest []driver.Value) error {
	var err error
	r.w.do(func() { err = r.r.Next(dest) })
	return err
}
