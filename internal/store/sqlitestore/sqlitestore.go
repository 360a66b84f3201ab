package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/groupcommit"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is the SQLite store.Store.
type Store struct {
	threads threadNumbers // the event log's thread numbers (events.go)

	write *sql.DB
	read  *sql.DB
	prep  *prepared                    // the write pool's hot statements
	rprep *prepared                    // the read pool's hot statements
	group groupcommit.Queue[*groupReq] // the runs' writes' group commit (group.go)
	busy  [numParts]busyCount          // the write connection's work (busy.go)
	docs  documents                    // knowledge documents per tenant (knowledge.go)
	ckpt  *checkpointer                // the WAL's checkpoints (checkpoint.go)
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path and applies pending migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	return open(ctx, path, walPolicy{checkpoint: walCheckpointFrames, tail: walTailFrames, cap: walCapFrames})
}

// open is Open with the WAL's checkpoints as wal says (tests make them
// small).
func open(ctx context.Context, path string, wal walPolicy) (*Store, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, err
		}
	}
	// SQLite's page caches take their pages from one pool (pagepool.go),
	// which must be given before the process's first connection. Without
	// it the caches work the same, page by page at twice the memory, so a
	// pool SQLite refused is not a reason to fail the open.
	setupPagePool()
	// The write connection's 16 MiB page cache keeps the event log's index
	// pages in memory under load; it fills within the first minute of
	// steady load (the database grows by about a MiB a second at 200
	// streams) and stays full. Its size has a cost SQLite adds at every
	// commit while the database is under 1 GiB: the B-tree balance
	// renumbers pages through the lock-byte page (page 262145 at 4 KiB
	// pages) as a temporary key, which leaves the cache's greatest key
	// there, so each commit's truncate to the database's size walks the
	// whole cache (~1.7 % of the server's CPU in a soak). A 4 MiB cache
	// saved that and, before the page pool, ~22 MiB, but let the soak's
	// anonymous memory grow by ~0.4 MiB a minute: the allocator's slots
	// touched for the first time, up to what it had mapped, which the pool
	// now takes at the start (docs/benchmarks.md, "eighteenth round: the
	// writer's page cache" and "nineteenth round"). Each read connection
	// gets 2 MiB: every read after another connection's commit starts from
	// an emptied cache (WAL mode resets a connection's cache when the
	// database has changed), so under load a reader holds little more than
	// one query's pages, and when writes stop its cache would otherwise
	// keep filling, up to 16 MiB per reader, with every page read. So the
	// caches are bounded by 16 MiB + 2 MiB per reader (and the
	// checkpointer's 256 KiB, checkpoint.go), reached early
	// (docs/benchmarks.md, "the soak's RSS"). Temporary tables and sorts
	// stay in memory too: a temporary file is a file descriptor, which a
	// busy process may not have to spare. The WAL is checkpointed off the write connection's
	// turn (checkpoint.go), so no connection checkpoints on commit
	// (wal_autocheckpoint(0)).
	pragmas := "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_pragma=temp_store(MEMORY)&_pragma=wal_autocheckpoint(0)"
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + pragmas
	write, err := sql.Open("sqlite", dsn+cacheSize(writeCacheKiB)+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	if err := keepOpen(ctx, write, 1); err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	s := &Store{write: write}
	if err := s.migrate(ctx); err != nil {
		write.Close()
		return nil, err
	}
	read, err := sql.Open("sqlite", dsn+cacheSize(readCacheKiB)+"&mode=ro")
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	if err := keepOpen(ctx, read, max(4, runtime.GOMAXPROCS(0))); err != nil {
		read.Close()
		write.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	s.read = read
	if s.ckpt, err = openCheckpointer(ctx, dsn, path, wal); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	if s.prep, err = prepareAll(ctx, write, hotStatements); err == nil {
		s.rprep, err = prepareAll(ctx, read, hotReads)
	}
	if err == nil {
		err = s.docs.load(ctx, write)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	s.startCheckpoints()
	return s, nil
}

// keepOpen opens db's n connections now and keeps them for the life of the
// store. database/sql would close all but two idle ones and reopen them on
// demand, and each reopen needs new file descriptors (the database, its
// WAL), which a process at its open-files limit cannot get: a run's
// knowledge search or history read then failed with "unable to open
// database file (14)". Opened at start, they never need another.
func keepOpen(ctx context.Context, db *sql.DB, n int) error {
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close() // back to the pool, which keeps it
		}
	}()
	for range n {
		c, err := db.Conn(ctx) // held: the next one is a new connection
		if err != nil {
			return err
		}
		conns = append(conns, c)
		if err := c.PingContext(ctx); err != nil {
			return err
		}
	}
	return nil
}

// MaxConns is how many connections the store holds, all opened by Open.
func (s *Store) MaxConns() int {
	return s.write.Stats().MaxOpenConnections + s.read.Stats().MaxOpenConnections + s.ckpt.db.Stats().MaxOpenConnections
}

// Migrate applies pending migrations to the database at path and closes it.
func Migrate(ctx context.Context, path string) error {
	s, err := Open(ctx, path)
	if err != nil {
		return err
	}
	return s.Close()
}

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("sqlitestore: migrate: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	seen := map[int]string{}
	for _, name := range names {
		v, err := strconv.Atoi(strings.SplitN(filepath.Base(name), "_", 2)[0])
		if err != nil {
			return fmt.Errorf("sqlitestore: migration %s: bad version", name)
		}
		// Two files of one version (branches merged) would apply one.
		if other, dup := seen[v]; dup {
			return fmt.Errorf("sqlitestore: migrations %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		err = s.tx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, v).Scan(&n); err != nil || n > 0 {
				return err
			}
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, v, time.Now().UnixMilli())
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlitestore: migration %s: %w", name, err)
		}
	}
	return nil
}

// Close stops the checkpointer, checkpoints the whole WAL into the
// database file and closes the connections.
func (s *Store) Close() error {
	var errs []error
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.close())
		if err := s.restartWAL(context.Background(), "TRUNCATE", nil); err != nil {
			errs = append(errs, fmt.Errorf("sqlitestore: checkpoint at close: %w", err))
		}
	}
	errs = append(errs, s.prep.close(), s.rprep.close())
	if s.read != nil {
		errs = append(errs, s.read.Close())
	}
	errs = append(errs, s.write.Close())
	return errors.Join(errs...)
}

// Ping checks that a read can be served.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return interpret(s.read.QueryRowContext(ctx, `SELECT 1`).Scan(&one))
}

// tx runs fn in a write transaction of its own.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.txFor(ctx, partOther, 1, fn)
}

// txFor is tx counted as writes writes of part p (busy.go).
func (s *Store) txFor(ctx context.Context, p writerPart, writes int, fn func(*sql.Tx) error) (err error) {
	labelled(ctx, p, func(context.Context) {
		var tx *sql.Tx
		if tx, err = s.write.BeginTx(ctx, nil); err != nil {
			err = interpret(err)
			return
		}
		defer s.held(p, time.Now(), writes)
		if err = fn(tx); err != nil {
			tx.Rollback()
			err = interpret(err)
			return
		}
		err = interpret(tx.Commit())
	})
	return err
}

// interpret maps driver errors to store sentinels, in one place.
func interpret(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %v", store.ErrConflict, err)
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("%w: %v", store.ErrNotFound, err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL:
			return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
		}
	}
	return err
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// nullJSON stores empty JSON as NULL.
func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

func rawJSON(ns sql.NullString) json.RawMessage {
	if !ns.Valid || ns.String == "" {
		return nil
	}
	return json.RawMessage(ns.String)
}

type scanner interface{ Scan(...any) error }

// collect reads every row of a query with scan:
// collect(scanRun)(db.QueryContext(…)).
func collect[T any](scan func(scanner) (T, error)) func(*sql.Rows, error) ([]T, error) {
	return func(rows *sql.Rows, err error) ([]T, error) {
		if err != nil {
			return nil, interpret(err)
		}
		defer rows.Close()
		var out []T
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				return nil, interpret(err)
			}
			out = append(out, v)
		}
		return out, interpret(rows.Err())
	}
}

// ---- conversations ----

// conversationCols are those a conversation is read from; a new one is
// written with conversationInsertCols (and its active leaf, when its start
// writes its first message).
const (
	conversationCols       = `id, tenant, owner, title, engine, agent_id, created_at, updated_at, active_leaf`
	conversationInsertCols = `id, tenant, owner, title, engine, agent_id, created_at, updated_at`
)

func scanConversation(row scanner) (chat.Conversation, error) {
	var c chat.Conversation
	var created, updated int64
	err := row.Scan(&c.ID, &c.Tenant, &c.Owner, &c.Title, &c.Engine, &c.AgentID, &created, &updated, &c.ActiveLeaf)
	c.CreatedAt, c.UpdatedAt = fromMS(created), fromMS(updated)
	return c, err
}

// CreateConversation stores a new conversation owned by s.
func (s *Store) CreateConversation(ctx context.Context, sc chat.Scope, c chat.Conversation) (chat.Conversation, error) {
	store.FillConversation(&c, sc, now())
	c.CreatedAt = c.CreatedAt.UTC().Truncate(time.Millisecond)
	c.UpdatedAt = c.CreatedAt
	_, err := s.write.ExecContext(ctx, `INSERT INTO conversations (`+conversationInsertCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.Tenant, c.Owner, c.Title, c.Engine, c.AgentID, ms(c.CreatedAt), ms(c.UpdatedAt))
	if err != nil {
		return chat.Conversation{}, fmt.Errorf("create conversation: %w", interpret(err))
	}
	return c, nil
}

// GetConversation reads one of s's conversations.
func (s *Store) GetConversation(ctx context.Context, sc chat.Scope, id string) (chat.Conversation, error) {
	c, err := scanConversation(s.read.QueryRowContext(ctx,
		`SELECT `+conversationCols+` FROM conversations WHERE id = ? AND tenant = ? AND owner = ?`, id, sc.Tenant, sc.User))
	if err != nil {
		return chat.Conversation{}, fmt.Errorf("get conversation %s: %w", id, interpret(err))
	}
	return c, nil
}

// ListConversations pages s's conversations, most recently updated first.
func (s *Store) ListConversations(ctx context.Context, sc chat.Scope, f store.ConversationFilter, p store.Page) ([]chat.Conversation, string, error) {
	q, args := `SELECT `+conversationCols+` FROM conversations WHERE tenant = ? AND owner = ?`, []any{sc.Tenant, sc.User}
	if f.AgentID != "" {
		q += ` AND agent_id = ?`
		args = append(args, f.AgentID)
	}
	return keysetPage(q, args,
		"updated_at", true, p, func(c chat.Conversation) store.Cursor { return store.Cursor{At: c.UpdatedAt, ID: c.ID} },
		func(q string, args []any) ([]chat.Conversation, error) {
			out, err := collect(scanConversation)(s.read.QueryContext(ctx, q, args...))
			if err != nil {
				return nil, fmt.Errorf("list conversations: %w", err)
			}
			return out, nil
		})
}

// UpdateConversation renames a conversation or pins its engine.
func (s *Store) UpdateConversation(ctx context.Context, sc chat.Scope, id string, title, engine *string) (chat.Conversation, error) {
	var c chat.Conversation
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		c, err = scanConversation(tx.QueryRowContext(ctx,
			`SELECT `+conversationCols+` FROM conversations WHERE id = ? AND tenant = ? AND owner = ?`, id, sc.Tenant, sc.User))
		if err != nil {
			return err
		}
		if title != nil {
			c.Title = *title
		}
		if engine != nil {
			c.Engine = *engine
		}
		c.UpdatedAt = later(now(), c.UpdatedAt)
		_, err = tx.ExecContext(ctx, `UPDATE conversations SET title = ?, engine = ?, updated_at = ? WHERE id = ?`,
			c.Title, c.Engine, ms(c.UpdatedAt), id)
		return err
	})
	if err != nil {
		return chat.Conversation{}, fmt.Errorf("update conversation %s: %w", id, err)
	}
	return c, nil
}

// later keeps updated_at from moving backwards when the clock does.
func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// DeleteConversation removes a conversation and everything in it.
func (s *Store) DeleteConversation(ctx context.Context, sc chat.Scope, id string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM conversations WHERE id = ? AND tenant = ? AND owner = ?`, id, sc.Tenant, sc.User)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrNotFound
		}
		for _, q := range deleteThreadEventsSQL {
			if _, err := tx.ExecContext(ctx, q, id, sc.Tenant); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete conversation %s: %w", id, err)
	}
	return nil
}

// ---- messages ----

const messageCols = `id, conversation_id, role, content, parts, metadata, run_id, tool_name, tool_call_id, created_at, parent_id`

func scanMessage(row scanner) (chat.Message, error) {
	var m chat.Message
	var parts, meta sql.NullString
	var created int64
	err := row.Scan(&m.ID, &m.ConversationID, &m.Role, &m.Content, &parts, &meta, &m.RunID, &m.ToolName, &m.ToolCallID, &created, &m.ParentID)
	m.Parts, m.Metadata, m.CreatedAt = rawJSON(parts), rawJSON(meta), fromMS(created)
	return m, err
}

// AppendMessage adds a message to one of s's conversations.
func (s *Store) AppendMessage(ctx context.Context, sc chat.Scope, m chat.Message) (chat.Message, error) {
	in := m
	err := s.grouped(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// From the caller's message each time: a try before this one set
		// its parent from a transaction that was not kept (group.go).
		m = in
		return s.insertMessage(ctx, tx, sc, &m, now())
	})
	if err != nil {
		return chat.Message{}, fmt.Errorf("append message to %s: %w", m.ConversationID, err)
	}
	return m, nil
}

// insertMessage's statements beside insertMessageSQL: three in all, where
// a read of the conversation's active leaf, one of the run's place in the
// tree, and separate updates of its updatedAt and leaf made five (a run's
// answer is one of the three grouped writes of every chat;
// docs/benchmarks.md, issue 25). The place is read apart from the insert:
// an INSERT … SELECT that reads messages makes SQLite copy its row to a
// temporary table first, which cost more than the statement it saved.
const (
	// messagePlaceSQL reads where a message goes in the tree of a
	// conversation of the scope (no row: not the scope's;
	// store.Steering): the given parent, else after the run's latest
	// message, else where the run began, else after the active leaf; and
	// the active leaf.
	messagePlaceSQL = `SELECT coalesce(nullif(?, ''),
			(SELECT coalesce((SELECT id FROM messages WHERE conversation_id = r.conversation_id AND run_id = r.id ORDER BY created_at DESC, id DESC LIMIT 1), r.parent_id)
				FROM runs r WHERE r.id = ? AND r.conversation_id = c.id),
			c.active_leaf), c.active_leaf
		FROM conversations c WHERE c.id = ? AND c.tenant = ? AND c.owner = ?`
	// appendedSQL bumps the conversation's updatedAt and sets its active
	// leaf (the new message, if that went after the leaf read with its
	// place: the transaction holds SQLite's one write lock since).
	appendedSQL = `UPDATE conversations SET updated_at = max(updated_at, ?), active_leaf = ? WHERE id = ?`
)

// insertMessage fills in m's defaults, inserts it and bumps its
// conversation's updatedAt; ErrNotFound when the conversation is not sc's.
func (s *Store) insertMessage(ctx context.Context, tx *sql.Tx, sc chat.Scope, m *chat.Message, at time.Time) error {
	store.FillMessage(m, at)
	m.CreatedAt = m.CreatedAt.UTC().Truncate(time.Millisecond)
	var leaf string
	err := s.prep.queryRow(ctx, tx, messagePlaceSQL, m.ParentID, m.RunID, m.ConversationID, sc.Tenant, sc.User).Scan(&m.ParentID, &leaf)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return err
	}
	_, err = s.prep.exec(ctx, tx, insertMessageSQL,
		m.ID, m.ConversationID, m.Role, m.Content, nullJSON(m.Parts), nullJSON(m.Metadata), m.RunID, m.ToolName, m.ToolCallID, ms(m.CreatedAt), m.ParentID, sc.Tenant)
	if err != nil {
		return err
	}
	next := leaf
	if leaf == m.ParentID {
		next = m.ID
	}
	_, err = s.prep.exec(ctx, tx, appendedSQL, ms(m.CreatedAt), next, m.ConversationID)
	return err
}

// ListMessages pages a conversation's messages, oldest first.
func (s *Store) ListMessages(ctx context.Context, sc chat.Scope, conversationID string, f store.MessageFilter, p store.Page) ([]chat.Message, string, error) {
	q := `SELECT ` + messageCols + ` FROM messages WHERE conversation_id = ? AND tenant = ?`
	args := []any{conversationID, sc.Tenant}
	if f.ToolName != "" {
		q += ` AND tool_name = ?`
		args = append(args, f.ToolName)
	}
	if f.RunID != "" {
		q += ` AND run_id = ?`
		args = append(args, f.RunID)
	}
	return keysetPage(q, args, "created_at", false, p, messageCursor, func(q string, args []any) ([]chat.Message, error) {
		if _, err := s.GetConversation(ctx, sc, conversationID); err != nil {
			return nil, err
		}
		out, err := collect(scanMessage)(s.read.QueryContext(ctx, q, args...))
		if err != nil {
			return nil, fmt.Errorf("list messages: %w", err)
		}
		return out, nil
	})
}

// ---- runs ----

const runCols = `id, tenant, owner, conversation_id, turn_id, status, input, engine, model, error_code, error_message, usage, state, created_at, started_at, ended_at, lease_owner, lease_epoch, cancel_requested, seq_reserved, trace_id, span_id, agent_id, agent_version, parent_id`

func scanRun(row scanner) (chat.Run, error) {
	var usage sql.NullString
	r, err := scanRunUsage(row, &usage)
	if err == nil {
		decodeUsage(&r, usage)
	}
	return r, err
}

// decodeUsage sets r's usage from its stored JSON.
func decodeUsage(r *chat.Run, usage sql.NullString) {
	if usage.Valid {
		_ = json.Unmarshal([]byte(usage.String), &r.Usage)
	}
}

// scanRunUsage is scanRun leaving the stored usage undecoded in usage.
func scanRunUsage(row scanner, usage *sql.NullString) (chat.Run, error) {
	var r chat.Run
	var ecode, emsg, state sql.NullString
	var created, started int64
	var ended sql.NullInt64
	err := row.Scan(&r.ID, &r.Tenant, &r.Owner, &r.ConversationID, &r.TurnID, &r.Status, &r.Input, &r.Engine, &r.Model,
		&ecode, &emsg, usage, &state, &created, &started, &ended, &r.LeaseOwner, &r.LeaseEpoch, &r.CancelRequested, &r.SeqReserved, &r.TraceID, &r.SpanID,
		&r.AgentID, &r.AgentVersion, &r.ParentID)
	if err != nil {
		return r, err
	}
	if ecode.Valid {
		r.Error = &event.ErrorInfo{Code: ecode.String, Message: emsg.String}
	}
	r.State = rawJSON(state)
	r.CreatedAt, r.StartedAt = fromMS(created), fromMS(started)
	if ended.Valid {
		t := fromMS(ended.Int64)
		r.EndedAt = &t
	}
	return r, nil
}

// CreateRun starts a run record; the database refuses a second active run per conversation.
func (s *Store) CreateRun(ctx context.Context, sc chat.Scope, r chat.Run) (chat.Run, error) {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM conversations WHERE id = ? AND tenant = ? AND owner = ?`,
			r.ConversationID, sc.Tenant, sc.User).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		return s.insertRun(ctx, tx, sc, &r, now(), false)
	})
	if err != nil {
		return chat.Run{}, fmt.Errorf("create run: %w", err)
	}
	return r, nil
}

// insertRun fills in r's defaults and inserts it into a conversation the
// caller has checked is sc's, refusing a second active run.
func (s *Store) insertRun(ctx context.Context, tx *sql.Tx, sc chat.Scope, r *chat.Run, at time.Time, newConversation bool) error {
	store.FillRun(r, sc, at)
	if !newConversation { // a conversation this transaction created has no run
		var active string
		switch err := s.prep.queryRow(ctx, tx, activeRunSQL, r.ConversationID).Scan(&active); {
		case err == nil:
			return &store.BusyError{ActiveRunID: active}
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
	}
	_, err := s.prep.exec(ctx, tx, insertRunSQL,
		r.ID, r.Tenant, r.Owner, r.ConversationID, r.TurnID, r.Status, r.Input, r.Engine, r.Model, nullJSON(r.State),
		ms(r.CreatedAt), ms(r.StartedAt), r.LeaseOwner, r.LeaseEpoch, r.SeqReserved, r.TraceID, r.SpanID, r.AgentID, r.AgentVersion, r.ParentID)
	return err
}

// GetRun reads one of s's runs.
func (s *Store) GetRun(ctx context.Context, sc chat.Scope, id string) (chat.Run, error) {
	r, err := scanRun(s.read.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ? AND tenant = ? AND owner = ?`, id, sc.Tenant, sc.User))
	if err != nil {
		return chat.Run{}, fmt.Errorf("get run %s: %w", id, interpret(err))
	}
	return r, nil
}

// GetRunAnyOwner reads a run of the tenant whoever owns it (system use only).
func (s *Store) GetRunAnyOwner(ctx context.Context, tenant, id string) (chat.Run, error) {
	r, err := scanRun(s.read.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ? AND tenant = ?`, id, tenant))
	if err != nil {
		return chat.Run{}, fmt.Errorf("get run %s: %w", id, interpret(err))
	}
	return r, nil
}

// UpdateRun's statements.
const (
	selectRunSQL = `SELECT ` + runCols + ` FROM runs WHERE id = ? AND tenant = ?`
	// updateRunSQL changes what the update sets, each column behind its own
	// flag, if the run's status is one of a comma-separated list ('' for
	// any), and returns the run: one statement, where a read of the run
	// before its update made two (the end of every run; docs/benchmarks.md,
	// issue 25). A stored NULL usage is written as a zero one, as the
	// read-then-write did.
	updateRunSQL = `UPDATE runs SET
		status = CASE WHEN ? <> '' THEN ? ELSE status END,
		error_code = CASE WHEN ? THEN ? ELSE error_code END,
		error_message = CASE WHEN ? THEN ? ELSE error_message END,
		usage = coalesce(?, usage, ?),
		model = CASE WHEN ? THEN ? ELSE model END,
		state = CASE WHEN ? THEN ? ELSE state END,
		ended_at = coalesce(?, ended_at),
		cancel_requested = CASE WHEN ? THEN 1 ELSE cancel_requested END
		WHERE id = ? AND tenant = ? AND (? = '' OR instr(?, ',' || status || ',') > 0)
		RETURNING ` + runCols
)

// zeroUsage is the usage written over a stored NULL.
var zeroUsage = func() string { b, _ := json.Marshal(event.Usage{}); return string(b) }()

// UpdateRun changes a run, optionally only from the given statuses.
func (s *Store) UpdateRun(ctx context.Context, tenant, id string, u store.RunUpdate) (chat.Run, error) {
	// The arguments are made before the write connection is taken, and the
	// stored usage is decoded after it is given back (and only when the
	// update did not replace it): Go work while the connection is held
	// holds every other write up too.
	var hasErr bool
	var ecode, emsg, usage, model, state, ended, from any
	if u.Error != nil {
		hasErr, ecode, emsg = true, u.Error.Code, u.Error.Message
	}
	if u.Usage != nil {
		b, _ := json.Marshal(*u.Usage)
		usage = string(b)
	}
	if u.Model != nil {
		model = *u.Model
	}
	if u.State != nil && string(u.State) != "null" {
		state = nullJSON(u.State)
	}
	if u.EndedAt != nil {
		ended = ms(u.EndedAt.UTC().Truncate(time.Millisecond))
	}
	from = ""
	if len(u.From) > 0 {
		from = "," + strings.Join(u.From, ",") + ","
	}
	var r chat.Run
	var storedUsage sql.NullString
	err := s.grouped(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		r, err = scanRunUsage(s.prep.queryRow(ctx, tx, updateRunSQL,
			u.Status, u.Status, hasErr, ecode, hasErr, emsg, usage, zeroUsage, u.Model != nil, model,
			u.State != nil, state, ended, u.CancelRequested, id, tenant, from, from), &storedUsage)
		if errors.Is(err, sql.ErrNoRows) && len(u.From) > 0 {
			// Not found, or not in a status it may change from.
			cur, err := scanRun(s.prep.queryRow(ctx, tx, selectRunSQL, id, tenant))
			if err != nil {
				return err
			}
			return fmt.Errorf("%w: run %s is %s", store.ErrConflict, id, cur.Status)
		}
		if err != nil {
			return err
		}
		// What was written, as the caller gave it (its usage's empty
		// slices, say, which the stored JSON drops).
		applyRunUpdate(&r, u)
		if u.Usage == nil || u.EndedAt == nil {
			return nil
		}
		// The run's end and its usage records: one transaction.
		return s.recordUsage(ctx, tx, r)
	})
	if err != nil {
		return chat.Run{}, fmt.Errorf("update run %s: %w", id, err)
	}
	if u.Usage == nil {
		decodeUsage(&r, storedUsage)
	}
	return r, nil
}

func applyRunUpdate(r *chat.Run, u store.RunUpdate) {
	if u.Status != "" {
		r.Status = u.Status
	}
	if u.Error != nil {
		r.Error = u.Error
	}
	if u.Usage != nil {
		r.Usage = *u.Usage
	}
	if u.Model != nil {
		r.Model = *u.Model
	}
	if u.State != nil {
		r.State = u.State
		if string(u.State) == "null" {
			r.State = nil
		}
	}
	if u.EndedAt != nil {
		t := u.EndedAt.UTC().Truncate(time.Millisecond)
		r.EndedAt = &t
	}
	if u.CancelRequested {
		r.CancelRequested = true
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// activeRunReadSQL is ActiveRun's query.
const activeRunReadSQL = `SELECT ` + runCols + ` FROM runs WHERE conversation_id = ? AND tenant = ? AND owner = ? AND status IN ('queued','running','awaiting_input')`

// ActiveRun returns the conversation's queued, running or waiting run.
func (s *Store) ActiveRun(ctx context.Context, sc chat.Scope, conversationID string) (chat.Run, error) {
	r, err := scanRun(s.rprep.row(ctx, activeRunReadSQL, conversationID, sc.Tenant, sc.User))
	if err != nil {
		return chat.Run{}, fmt.Errorf("active run of %s: %w", conversationID, interpret(err))
	}
	return r, nil
}

// ListRuns lists a conversation's runs, oldest first.
func (s *Store) ListRuns(ctx context.Context, sc chat.Scope, conversationID string) ([]chat.Run, error) {
	out, err := collect(scanRun)(s.read.QueryContext(ctx, `SELECT `+runCols+` FROM runs WHERE conversation_id = ? AND tenant = ? AND owner = ? ORDER BY created_at, id`,
		conversationID, sc.Tenant, sc.User))
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// ClaimRun continues a run awaiting input, in one transaction (SQLite has one
// writer, so the read and the writes cannot interleave with another claim).
func (s *Store) ClaimRun(ctx context.Context, p store.ClaimRunParams) (chat.Run, error) {
	tenant, runID, confirmationID := p.Tenant, p.RunID, p.ConfirmationID
	var r chat.Run
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = scanRun(tx.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ? AND tenant = ?`, runID, tenant))
		if err != nil {
			return err
		}
		if r.Status != chat.RunAwaitingInput {
			return fmt.Errorf("%w: run %s is %s", store.ErrConflict, runID, r.Status)
		}
		if confirmationID != "" {
			res, err := tx.ExecContext(ctx, `UPDATE confirmations SET applied_at = ?
				WHERE id = ? AND run_id = ? AND tenant = ? AND status <> 'pending' AND applied_at IS NULL`,
				ms(now()), confirmationID, runID, tenant)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("%w: decision %s of run %s is pending or applied", store.ErrConflict, confirmationID, runID)
			}
		}
		// The claimer takes the paused state (r keeps it); the row's is
		// cleared, so a State on a running row means a pause being recorded.
		r.Status, r.LeaseOwner, r.LeaseEpoch = chat.RunRunning, p.Owner, p.Epoch
		_, err = tx.ExecContext(ctx, `UPDATE runs SET status = ?, lease_owner = ?, lease_epoch = ?, state = NULL WHERE id = ?`, r.Status, p.Owner, p.Epoch, runID)
		return err
	})
	if err != nil {
		return chat.Run{}, fmt.Errorf("claim run %s: %w", runID, err)
	}
	return r, nil
}

// DeleteRunsEndedBefore applies retention to finished runs and their events.
func (s *Store) DeleteRunsEndedBefore(ctx context.Context, t time.Time) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, q := range deleteOldEventsSQL {
			if _, err := tx.ExecContext(ctx, q, ms(t)); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE ended_at IS NOT NULL AND ended_at < ?`, ms(t))
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete old runs: %w", err)
	}
	return int(n), nil
}

// ---- confirmations ----

const confirmationCols = `id, tenant, owner, run_id, conversation_id, tool_call_id, tool_name, args, status, decided_args, reason, created_at, expires_at, decided_at, applied_at`

func scanConfirmation(row scanner) (chat.Confirmation, error) {
	var c chat.Confirmation
	var args string
	var decided sql.NullString
	var created, expires int64
	var decidedAt, appliedAt sql.NullInt64
	err := row.Scan(&c.ID, &c.Tenant, &c.Owner, &c.RunID, &c.ConversationID, &c.ToolCallID, &c.ToolName, &args, &c.Status,
		&decided, &c.Reason, &created, &expires, &decidedAt, &appliedAt)
	c.Args, c.DecidedArgs = json.RawMessage(args), rawJSON(decided)
	c.CreatedAt, c.ExpiresAt = fromMS(created), fromMS(expires)
	if decidedAt.Valid {
		t := fromMS(decidedAt.Int64)
		c.DecidedAt = &t
	}
	if appliedAt.Valid {
		t := fromMS(appliedAt.Int64)
		c.AppliedAt = &t
	}
	return c, err
}

// CreateConfirmation stores a pending confirmation.
func (s *Store) CreateConfirmation(ctx context.Context, c chat.Confirmation) (chat.Confirmation, error) {
	store.FillConfirmation(&c, now())
	if err := insertConfirmation(ctx, s.write, c); err != nil {
		return chat.Confirmation{}, fmt.Errorf("create confirmation: %w", interpret(err))
	}
	c.CreatedAt, c.ExpiresAt = c.CreatedAt.UTC().Truncate(time.Millisecond), c.ExpiresAt.UTC().Truncate(time.Millisecond)
	return c, nil
}

// execer is the write pool or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func insertConfirmation(ctx context.Context, db execer, c chat.Confirmation) error {
	_, err := db.ExecContext(ctx, `INSERT INTO confirmations (`+confirmationCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, '', ?, ?, NULL, NULL)`,
		c.ID, c.Tenant, c.Owner, c.RunID, c.ConversationID, c.ToolCallID, c.ToolName, string(c.Args), c.Status, ms(c.CreatedAt), ms(c.ExpiresAt))
	return err
}

// GetConfirmation reads one of s's confirmations.
func (s *Store) GetConfirmation(ctx context.Context, sc chat.Scope, id string) (chat.Confirmation, error) {
	c, err := scanConfirmation(s.read.QueryRowContext(ctx, `SELECT `+confirmationCols+` FROM confirmations WHERE id = ? AND tenant = ? AND owner = ?`, id, sc.Tenant, sc.User))
	if err != nil {
		return chat.Confirmation{}, fmt.Errorf("get confirmation %s: %w", id, interpret(err))
	}
	return c, nil
}

// DecideConfirmation records the one decision that wins.
func (s *Store) DecideConfirmation(ctx context.Context, sc chat.Scope, id string, d chat.Decision) (chat.Confirmation, error) {
	var c chat.Confirmation
	var outcome error
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		c, err = scanConfirmation(tx.QueryRowContext(ctx, `SELECT `+confirmationCols+` FROM confirmations WHERE id = ? AND tenant = ? AND owner = ?`, id, sc.Tenant, sc.User))
		if err != nil {
			return err
		}
		var changed bool
		if changed, outcome = store.ApplyDecision(&c, d); !changed {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE confirmations SET status = ?, decided_args = ?, reason = ?, decided_at = ? WHERE id = ?`,
			c.Status, nullJSON(c.DecidedArgs), c.Reason, ms(*c.DecidedAt), id)
		return err
	})
	if err != nil {
		return chat.Confirmation{}, fmt.Errorf("decide confirmation %s: %w", id, err)
	}
	if outcome != nil {
		return c, fmt.Errorf("decide confirmation %s: %w", id, outcome)
	}
	return c, nil
}

// ListConfirmations lists s's confirmations, newest first.
func (s *Store) ListConfirmations(ctx context.Context, sc chat.Scope, status string) ([]chat.Confirmation, error) {
	q := `SELECT ` + confirmationCols + ` FROM confirmations WHERE tenant = ? AND owner = ?`
	args := []any{sc.Tenant, sc.User}
	if status != "" {
		q += ` AND status = ?`
		args = append(args, status)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT 500`
	out, err := collect(scanConfirmation)(s.read.QueryContext(ctx, q, args...))
	if err != nil {
		return nil, fmt.Errorf("list confirmations: %w", err)
	}
	return out, nil
}

// UnappliedDecisions finds decisions no one acted on, through the partial
// index of decided, unapplied confirmations.
func (s *Store) UnappliedDecisions(ctx context.Context, before time.Time, limit int) ([]chat.Confirmation, error) {
	out, err := collect(scanConfirmation)(s.read.QueryContext(ctx, `SELECT c.`+strings.ReplaceAll(confirmationCols, ", ", ", c.")+`
		FROM confirmations c JOIN runs r ON r.id = c.run_id
		WHERE c.status <> 'pending' AND c.applied_at IS NULL AND c.decided_at < ? AND r.status = 'awaiting_input'
		ORDER BY c.decided_at LIMIT ?`, ms(before), limit))
	if err != nil {
		return nil, fmt.Errorf("unapplied decisions: %w", err)
	}
	return out, nil
}

// ExpireConfirmations marks overdue pending confirmations expired.
func (s *Store) ExpireConfirmations(ctx context.Context, at time.Time) ([]chat.Confirmation, error) {
	var out []chat.Confirmation
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE confirmations SET status = 'expired', decided_at = ? WHERE status = 'pending' AND expires_at < ? RETURNING `+confirmationCols,
			ms(at), ms(at))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanConfirmation(rows)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("expire confirmations: %w", err)
	}
	return out, nil
}
