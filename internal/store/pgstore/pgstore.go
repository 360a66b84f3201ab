package pgstore

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/groupcommit"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is the PostgreSQL store.Store.
type Store struct {
	pool *pgxpool.Pool
	// live is a pool of its own for the replica heartbeat: behind a burst of
	// starts and event writes the main pool's queue can be seconds long,
	// and a heartbeat that waits in it lets other replicas take this one's
	// runs while it is alive. The heartbeat is one small write per replica
	// per period, so one connection (two for a registration racing a
	// renewal) is all it needs.
	live *pgxpool.Pool
	// events is a pool of its own for the event log's appends, for the same
	// reason: the log has one writer per replica, and in the main pool its
	// commits queued behind a burst's starts: at 1000 streams arriving over
	// 2 s on 2 cores, 92 % of the writer's time was spent waiting for one of
	// the 4 connections (docs/benchmarks.md, "Issue 25, ninth round:
	// PostgreSQL + Redis"), and every run's end waits for its events'
	// commit. Two connections: the writer's, and one for an append from
	// elsewhere (a run ended by another replica) beside it.
	events *pgxpool.Pool
	// eventsPrepared says the event log's appends may use a statement
	// prepared on the log's connections (appendEventRows): pgx's default
	// exec mode, which prepares statements anyway.
	eventsPrepared bool
	// group queues the writes being group-committed (group.go).
	group groupcommit.Queue[*groupReq]
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url and applies pending migrations.
//
// url is a PostgreSQL URL or keyword/value string as pgx accepts it, including
// pgxpool's pool_* parameters (pool_max_conns, …). The schema is chosen either
// by the standard search_path runtime parameter or by a "schema" parameter,
// which sets search_path to that one schema and creates it if missing.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, schema, err := parseConfig(url)
	if err != nil {
		return nil, err
	}
	liveCfg := cfg.Copy()
	liveCfg.MaxConns, liveCfg.MinConns = 2, 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", interpretError(err))
	}
	live, err := pgxpool.NewWithConfig(ctx, liveCfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open: %w", interpretError(err))
	}
	eventsCfg := cfg.Copy()
	eventsCfg.MaxConns, eventsCfg.MinConns = 2, 0
	events, err := pgxpool.NewWithConfig(ctx, eventsCfg)
	if err != nil {
		pool.Close()
		live.Close()
		return nil, fmt.Errorf("pgstore: open: %w", interpretError(err))
	}
	s := &Store{pool: pool, live: live, events: events,
		eventsPrepared: eventsCfg.ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement}
	if err := s.migrate(ctx, schema); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Migrate applies pending migrations to the database at url and closes it.
func Migrate(ctx context.Context, url string) error {
	s, err := Open(ctx, url)
	if err != nil {
		return err
	}
	return s.Close()
}

// parseConfig reads url, taking out the "schema" parameter that PostgreSQL
// itself would refuse as an unknown runtime parameter.
func parseConfig(raw string) (*pgxpool.Config, string, error) {
	schema := ""
	if u, err := url.Parse(raw); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		schema = q.Get("schema")
		q.Del("schema")
		u.RawQuery = q.Encode()
		raw = u.String()
	}
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		// The error may quote the URL, password included: say only what failed.
		return nil, "", errors.New("pgstore: invalid database url")
	}
	if schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	}
	return cfg, schema, nil
}

func (s *Store) migrate(ctx context.Context, schema string) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Serialise replicas migrating the same schema; the lock ends with the transaction.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('agentchat.migrate:' || current_setting('search_path'), 0))`); err != nil {
			return err
		}
		if schema != "" {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return err
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return err
		}
		done := map[int32]bool{}
		for _, v := range applied {
			done[v] = true
		}
		seen := map[int]string{}
		for _, name := range names {
			v, err := strconv.Atoi(strings.SplitN(path.Base(name), "_", 2)[0])
			if err != nil {
				return fmt.Errorf("migration %s: bad version", name)
			}
			// Two files of one version (branches merged) would apply one.
			if other, dup := seen[v]; dup {
				return fmt.Errorf("migrations %s and %s share version %d", other, name, v)
			}
			seen[v] = name
			if done[int32(v)] {
				continue
			}
			body, err := migrations.ReadFile(name)
			if err != nil {
				return err
			}
			// No arguments: pgx uses the simple protocol, which runs a multi-statement file.
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("migration %s: %w", name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pgstore: migrate: %w", interpretError(err))
	}
	return nil
}

// MaxConns is how many connections the store may hold at once (its pools'
// bounds), which the process's open-files budget keeps in reserve.
func (s *Store) MaxConns() int {
	return int(s.pool.Config().MaxConns + s.live.Config().MaxConns + s.events.Config().MaxConns)
}

// Close closes the pool, waiting for connections in use to be returned.
func (s *Store) Close() error {
	s.pool.Close()
	s.live.Close()
	s.events.Close()
	return nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("pgstore: ping: %w", interpretError(err))
	}
	return nil
}

// interpretError maps driver errors to store sentinels, in one place. The
// driver error stays in the chain (errors.As still finds a *pgconn.PgError).
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	// A cancelled or timed-out call is the caller's doing, not an outage.
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505": // unique_violation
			return fmt.Errorf("%w: %w", store.ErrConflict, err)
		case pgErr.Code == "23503": // foreign_key_violation: the parent is gone
			return fmt.Errorf("%w: %w", store.ErrNotFound, err)
		case strings.HasPrefix(pgErr.Code, "08"), // connection_exception
			pgErr.Code == "57P01", // admin_shutdown
			pgErr.Code == "57P02", // crash_shutdown
			pgErr.Code == "57P03", // cannot_connect_now
			pgErr.Code == "53300": // too_many_connections
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
		// Anything else the server said (bad SQL, auth, missing database) is not
		// transient; retrying would not help.
		return err
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connectErr) || errors.As(err, &netErr) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// isConstraint reports whether err is a violation of the named constraint.
func isConstraint(err error, name string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.ConstraintName == name
}

// ms is the stored form of a time: UTC, whole milliseconds.
func ms(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

func now() time.Time { return ms(time.Now()) }

// nullJSON stores empty JSON as NULL; the bytes are written as they are.
func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}

func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

const activeStatuses = `('queued', 'running', 'awaiting_input')`

// ---- conversations ----

// conversationCols are those a conversation is read from; a new one is
// written with conversationInsertCols (its active leaf starts empty).
const (
	conversationCols       = `id, tenant, owner, title, engine, agent_id, created_at, updated_at, active_leaf`
	conversationInsertCols = `id, tenant, owner, title, engine, agent_id, created_at, updated_at`
)

func scanConversation(row pgx.Row) (chat.Conversation, error) {
	var c chat.Conversation
	err := row.Scan(&c.ID, &c.Tenant, &c.Owner, &c.Title, &c.Engine, &c.AgentID, &c.CreatedAt, &c.UpdatedAt, &c.ActiveLeaf)
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, err
}

func collectConversation(row pgx.CollectableRow) (chat.Conversation, error) {
	return scanConversation(row)
}

// CreateConversation stores a new conversation owned by sc.
func (s *Store) CreateConversation(ctx context.Context, sc chat.Scope, c chat.Conversation) (chat.Conversation, error) {
	store.FillConversation(&c, sc, now())
	c.CreatedAt, c.UpdatedAt = ms(c.CreatedAt), ms(c.UpdatedAt)
	_, err := s.pool.Exec(ctx, `INSERT INTO conversations (`+conversationInsertCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		c.ID, c.Tenant, c.Owner, c.Title, c.Engine, c.AgentID, c.CreatedAt, c.UpdatedAt)
	if err != nil {
		return chat.Conversation{}, fmt.Errorf("create conversation: %w", interpretError(err))
	}
	return c, nil
}

// GetConversation reads one of sc's conversations.
func (s *Store) GetConversation(ctx context.Context, sc chat.Scope, id string) (chat.Conversation, error) {
	c, err := scanConversation(s.pool.QueryRow(ctx,
		`SELECT `+conversationCols+` FROM conversations WHERE id = $1 AND tenant = $2 AND owner = $3`, id, sc.Tenant, sc.User))
	if err != nil {
		return chat.Conversation{}, fmt.Errorf("get conversation %s: %w", id, interpretError(err))
	}
	return c, nil
}

// ListConversations pages sc's conversations, most recently updated first.
func (s *Store) ListConversations(ctx context.Context, sc chat.Scope, f store.ConversationFilter, p store.Page) ([]chat.Conversation, string, error) {
	// The (tenant, owner[, agent_id], updated_at DESC, id DESC) indexes serve the page as a range.
	q, args := `SELECT `+conversationCols+` FROM conversations WHERE tenant = $1 AND owner = $2`, []any{sc.Tenant, sc.User}
	if f.AgentID != "" {
		q += ` AND agent_id = $3`
		args = append(args, f.AgentID)
	}
	return keysetPage(q, args,
		"updated_at", true, p, func(c chat.Conversation) store.Cursor { return store.Cursor{At: c.UpdatedAt, ID: c.ID} },
		func(q string, args []any) ([]chat.Conversation, error) {
			rows, err := s.pool.Query(ctx, q, args...)
			if err != nil {
				return nil, fmt.Errorf("list conversations: %w", interpretError(err))
			}
			out, err := pgx.CollectRows(rows, collectConversation)
			if err != nil {
				return nil, fmt.Errorf("list conversations: %w", interpretError(err))
			}
			return out, nil
		})
}

// UpdateConversation renames a conversation or pins its engine.
func (s *Store) UpdateConversation(ctx context.Context, sc chat.Scope, id string, title, engine *string) (chat.Conversation, error) {
	// GREATEST keeps updated_at from moving backwards when a clock does.
	c, err := scanConversation(s.pool.QueryRow(ctx, `UPDATE conversations
		SET title = COALESCE($4, title), engine = COALESCE($5, engine), updated_at = GREATEST(updated_at, $6)
		WHERE id = $1 AND tenant = $2 AND owner = $3 RETURNING `+conversationCols,
		id, sc.Tenant, sc.User, title, engine, now()))
	if err != nil {
		return chat.Conversation{}, fmt.Errorf("update conversation %s: %w", id, interpretError(err))
	}
	return c, nil
}

// DeleteConversation removes a conversation and everything in it: messages,
// runs and confirmations by cascade, and its events (which have no foreign key).
func (s *Store) DeleteConversation(ctx context.Context, sc chat.Scope, id string) error {
	var n int
	err := s.pool.QueryRow(ctx, `WITH c AS (
			DELETE FROM conversations WHERE id = $1 AND tenant = $2 AND owner = $3 RETURNING id
		), e AS (
			DELETE FROM events WHERE thread_id IN (SELECT id FROM c) AND tenant = $2
		)
		SELECT count(*) FROM c`, id, sc.Tenant, sc.User).Scan(&n)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete conversation %s: %w", id, interpretError(err))
	}
	return nil
}

// ---- messages ----

const messageCols = `id, conversation_id, role, content, parts, metadata, run_id, tool_name, tool_call_id, created_at, parent_id`

func scanMessage(row pgx.CollectableRow) (chat.Message, error) {
	var m chat.Message
	var parts, meta []byte
	err := row.Scan(&m.ID, &m.ConversationID, &m.Role, &m.Content, &parts, &meta, &m.RunID, &m.ToolName, &m.ToolCallID, &m.CreatedAt, &m.ParentID)
	m.Parts, m.Metadata, m.CreatedAt = rawJSON(parts), rawJSON(meta), m.CreatedAt.UTC()
	return m, err
}

// appendMessageSQL adds a message ($1 id, $2 conversation, $3 role, $4
// content, $5 parts, $6 metadata, $7 run, $8 tool name, $9 tool call id,
// $10 time, $13 parent or ”) to one of the principal's ($11 tenant, $12
// owner) conversations, bumps its updated_at, and keeps the tree
// (store.Steering): with no parent given, the message follows its run's
// latest message, else where its run began, else the active leaf, and the
// active leaf moves to it when it was its parent. The conversation's row is
// locked first, so appends to one conversation take turns. It returns the
// parent and the conversation's updated_at; no row when the conversation is
// not the principal's.
const appendMessageSQL = `WITH c AS (
		SELECT id, tenant, active_leaf FROM conversations WHERE id = $2 AND tenant = $11 AND owner = $12 FOR UPDATE
	), p AS (
		SELECT CASE WHEN $13::text <> '' THEN $13::text ELSE COALESCE(
			(SELECT COALESCE((SELECT m.id FROM messages m WHERE m.conversation_id = $2 AND m.run_id = $7 ORDER BY m.created_at DESC, m.id DESC LIMIT 1), r.parent_id)
				FROM runs r WHERE r.id = $7 AND $7::text <> '' AND r.conversation_id = $2),
			(SELECT active_leaf FROM c)) END AS parent
	), u AS (
		UPDATE conversations SET updated_at = GREATEST(updated_at, $10::timestamptz),
			active_leaf = CASE WHEN active_leaf = (SELECT parent FROM p) THEN $1::text ELSE active_leaf END
		WHERE id = (SELECT id FROM c) RETURNING id, tenant, updated_at
	)
	INSERT INTO messages (` + messageCols + `, tenant)
	SELECT $1::text, u.id, $3::text, $4::text, $5::json, $6::json, $7::text, $8::text, $9::text, $10::timestamptz, (SELECT parent FROM p), u.tenant FROM u
	RETURNING parent_id, (SELECT updated_at FROM u)`

// appendMessageArgs are appendMessageSQL's arguments for m.
func appendMessageArgs(sc chat.Scope, m chat.Message) []any {
	return []any{m.ID, m.ConversationID, m.Role, m.Content, nullJSON(m.Parts), nullJSON(m.Metadata), m.RunID, m.ToolName, m.ToolCallID, m.CreatedAt,
		sc.Tenant, sc.User, m.ParentID}
}

// AppendMessage adds a message to one of sc's conversations and bumps its
// updated_at, in one statement: the message is written only if the scoped
// UPDATE found the conversation.
func (s *Store) AppendMessage(ctx context.Context, sc chat.Scope, m chat.Message) (chat.Message, error) {
	store.FillMessage(&m, now())
	m.CreatedAt = ms(m.CreatedAt)
	var updated time.Time
	err := s.groupedRow(ctx, appendMessageSQL, appendMessageArgs(sc, m), func(row pgx.Row) error {
		return row.Scan(&m.ParentID, &updated)
	})
	if err != nil {
		return chat.Message{}, fmt.Errorf("append message to %s: %w", m.ConversationID, interpretError(err))
	}
	return m, nil
}

// ListMessages pages a conversation's messages, oldest first.
func (s *Store) ListMessages(ctx context.Context, sc chat.Scope, conversationID string, f store.MessageFilter, p store.Page) ([]chat.Message, string, error) {
	q := `SELECT ` + messageCols + ` FROM messages WHERE conversation_id = $1 AND tenant = $2`
	args := []any{conversationID, sc.Tenant}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.ToolName != "" {
		// tool_name <> '' lets the planner use the partial messages_by_tool index
		// even with a generic plan, where it cannot see the parameter's value.
		q += ` AND tool_name <> '' AND tool_name = ` + arg(f.ToolName)
	}
	if f.RunID != "" {
		q += ` AND run_id = ` + arg(f.RunID)
	}
	return keysetPage(q, args, "created_at", false, p, messageCursor, func(q string, args []any) ([]chat.Message, error) {
		var out []chat.Message
		err := s.scoped(ctx, sc, conversationID, q, args, func(rows pgx.Rows) error {
			var err error
			out, err = pgx.CollectRows(rows, scanMessage)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list messages of %s: %w", conversationID, err)
		}
		return out, nil
	})
}

// scoped runs query q in one pipelined round trip with the check that sc owns
// the conversation; read gets q's rows only when it does. The query itself
// filters by tenant too, so it never reads another tenant's rows either way.
func (s *Store) scoped(ctx context.Context, sc chat.Scope, conversationID, q string, args []any, read func(pgx.Rows) error) error {
	b := &pgx.Batch{}
	b.Queue(`SELECT EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND tenant = $2 AND owner = $3)`, conversationID, sc.Tenant, sc.User)
	b.Queue(q, args...)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	var owned bool
	if err := br.QueryRow().Scan(&owned); err != nil {
		return interpretError(err)
	}
	if !owned {
		return store.ErrNotFound
	}
	rows, err := br.Query()
	if err != nil {
		return interpretError(err)
	}
	if err := read(rows); err != nil {
		return interpretError(err)
	}
	return interpretError(br.Close())
}

// ---- runs ----

const runCols = `id, tenant, owner, conversation_id, turn_id, status, input, engine, model, error_code, error_message, usage, state, created_at, started_at, ended_at, lease_owner, lease_epoch, cancel_requested, seq_reserved, trace_id, span_id, agent_id, agent_version, parent_id`

// claimedCols are runCols of a claimed run r with the state it had (prev).
var claimedCols = strings.Replace("r."+strings.ReplaceAll(runCols, ", ", ", r."), "r.state", "prev.state", 1)

func scanRun(row pgx.Row) (chat.Run, error) {
	var r chat.Run
	var ecode, emsg *string
	var usage, state []byte
	err := row.Scan(&r.ID, &r.Tenant, &r.Owner, &r.ConversationID, &r.TurnID, &r.Status, &r.Input, &r.Engine, &r.Model,
		&ecode, &emsg, &usage, &state, &r.CreatedAt, &r.StartedAt, &r.EndedAt, &r.LeaseOwner, &r.LeaseEpoch, &r.CancelRequested, &r.SeqReserved, &r.TraceID, &r.SpanID,
		&r.AgentID, &r.AgentVersion, &r.ParentID)
	if err != nil {
		return chat.Run{}, err
	}
	if ecode != nil {
		r.Error = &event.ErrorInfo{Code: *ecode}
		if emsg != nil {
			r.Error.Message = *emsg
		}
	}
	if len(usage) > 0 {
		_ = json.Unmarshal(usage, &r.Usage)
	}
	r.State = rawJSON(state)
	r.CreatedAt, r.StartedAt = r.CreatedAt.UTC(), r.StartedAt.UTC()
	if r.EndedAt != nil {
		t := r.EndedAt.UTC()
		r.EndedAt = &t
	}
	return r, nil
}

func collectRun(row pgx.CollectableRow) (chat.Run, error) { return scanRun(row) }

// CreateRun starts a run record. The partial unique index runs_one_active
// refuses a second active run per conversation, so concurrent starts on any
// number of replicas cannot both win; the loser learns the active run's id.
func (s *Store) CreateRun(ctx context.Context, sc chat.Scope, r chat.Run) (chat.Run, error) {
	store.FillRun(&r, sc, now())
	r.CreatedAt, r.StartedAt = ms(r.CreatedAt), ms(r.StartedAt)
	r.Error, r.Usage, r.EndedAt, r.CancelRequested = nil, event.Usage{}, nil, false // as stored: set only by UpdateRun

	// The active run may end between our insert failing and our reading it;
	// then the insert is simply tried again.
	for range 3 {
		tag, err := s.pool.Exec(ctx, `INSERT INTO runs (id, tenant, owner, conversation_id, turn_id, status, input, engine, model, state, created_at, started_at, lease_owner, lease_epoch, seq_reserved, trace_id, span_id, agent_id, agent_version, parent_id)
			SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text, $10::json, $11::timestamptz, $12::timestamptz, $13::text, $14::bigint, $15::bigint, $16::text, $17::text, $18::text, $19::integer, $20::text
			WHERE EXISTS (SELECT 1 FROM conversations WHERE id = $4 AND tenant = $2 AND owner = $3)`,
			r.ID, r.Tenant, r.Owner, r.ConversationID, r.TurnID, r.Status, r.Input, r.Engine, r.Model, nullJSON(r.State),
			r.CreatedAt, r.StartedAt, r.LeaseOwner, r.LeaseEpoch, r.SeqReserved, r.TraceID, r.SpanID, r.AgentID, r.AgentVersion, r.ParentID)
		switch {
		case err == nil && tag.RowsAffected() == 0:
			return chat.Run{}, fmt.Errorf("create run: conversation %s: %w", r.ConversationID, store.ErrNotFound)
		case err == nil:
			return r, nil
		case !isConstraint(err, "runs_one_active"):
			return chat.Run{}, fmt.Errorf("create run: %w", interpretError(err))
		}
		var active string
		err = s.pool.QueryRow(ctx, `SELECT id FROM runs WHERE conversation_id = $1 AND status IN `+activeStatuses, r.ConversationID).Scan(&active)
		if err == nil {
			return chat.Run{}, fmt.Errorf("create run: %w", &store.BusyError{ActiveRunID: active})
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return chat.Run{}, fmt.Errorf("create run: %w", interpretError(err))
		}
	}
	return chat.Run{}, fmt.Errorf("create run: %w: conversation %s keeps starting runs", store.ErrConflict, r.ConversationID)
}

// GetRun reads one of sc's runs.
func (s *Store) GetRun(ctx context.Context, sc chat.Scope, id string) (chat.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE id = $1 AND tenant = $2 AND owner = $3`, id, sc.Tenant, sc.User))
	if err != nil {
		return chat.Run{}, fmt.Errorf("get run %s: %w", id, interpretError(err))
	}
	return r, nil
}

// GetRunAnyOwner reads a run of the tenant whoever owns it (system use only).
func (s *Store) GetRunAnyOwner(ctx context.Context, tenant, id string) (chat.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE id = $1 AND tenant = $2`, id, tenant))
	if err != nil {
		return chat.Run{}, fmt.Errorf("get run %s: %w", id, interpretError(err))
	}
	return r, nil
}

// UpdateRun changes a run, optionally only from the given statuses. The
// compare-and-set is the WHERE clause of one UPDATE, so it holds across
// replicas without a transaction; only a refusal costs a second query, to tell
// a missing run from one in another status.
func (s *Store) UpdateRun(ctx context.Context, tenant, id string, u store.RunUpdate) (chat.Run, error) {
	var status, ecode, emsg, model *string
	if u.Status != "" {
		status = &u.Status
	}
	if u.Error != nil {
		ecode, emsg = &u.Error.Code, &u.Error.Message
	}
	model = u.Model
	var usage any
	if u.Usage != nil {
		b, err := json.Marshal(*u.Usage)
		if err != nil {
			return chat.Run{}, fmt.Errorf("update run %s: %w", id, err)
		}
		usage = b
	}
	setState, state := u.State != nil, nullJSON(u.State)
	if string(u.State) == "null" {
		state = nil
	}
	var ended *time.Time
	if u.EndedAt != nil {
		t := ms(*u.EndedAt)
		ended = &t
	}
	var from []string
	if len(u.From) > 0 {
		from = u.From
	}
	args := []any{id, tenant, status, u.Error != nil, ecode, emsg, usage, model, setState, state, ended, from, u.CancelRequested}
	q := updateRunSQL + ` RETURNING ` + runCols
	if u.Usage != nil && u.EndedAt != nil {
		// An end with its usage writes the usage records in the same
		// statement, fed by the UPDATE's RETURNING: one round trip, where
		// BEGIN, UPDATE, INSERT and COMMIT were four (3 % of a replica's CPU
		// at a thousand streams).
		q = `WITH r AS (` + q + `), u AS (` + usageFromRunSQL + `) SELECT ` + runCols + ` FROM r`
		args = append(args, usageArgs(*u.Usage)...)
	}
	var r chat.Run
	err := s.groupedRow(ctx, q, args, func(row pgx.Row) (err error) {
		r, err = scanRun(row)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) && from != nil {
		var cur string
		if err = s.pool.QueryRow(ctx, `SELECT status FROM runs WHERE id = $1 AND tenant = $2`, id, tenant).Scan(&cur); err == nil {
			err = fmt.Errorf("%w: run %s is %s", store.ErrConflict, id, cur)
		}
	}
	if err != nil {
		return chat.Run{}, fmt.Errorf("update run %s: %w", id, interpretError(err))
	}
	return r, nil
}

// updateRunSQL is UpdateRun's UPDATE, without its RETURNING.
const updateRunSQL = `UPDATE runs SET
		status = COALESCE($3, status),
		error_code = CASE WHEN $4::boolean THEN $5::text ELSE error_code END,
		error_message = CASE WHEN $4::boolean THEN $6::text ELSE error_message END,
		usage = COALESCE($7::json, usage),
		model = COALESCE($8, model),
		state = CASE WHEN $9::boolean THEN $10::json ELSE state END,
		ended_at = COALESCE($11, ended_at),
		cancel_requested = cancel_requested OR $13
	WHERE id = $1 AND tenant = $2 AND ($12::text[] IS NULL OR status = ANY ($12::text[]))`

// ActiveRun returns the conversation's queued, running or waiting run.
func (s *Store) ActiveRun(ctx context.Context, sc chat.Scope, conversationID string) (chat.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runCols+` FROM runs
		WHERE conversation_id = $1 AND tenant = $2 AND owner = $3 AND status IN `+activeStatuses,
		conversationID, sc.Tenant, sc.User))
	if err != nil {
		return chat.Run{}, fmt.Errorf("active run of %s: %w", conversationID, interpretError(err))
	}
	return r, nil
}

// ListRuns lists a conversation's runs, oldest first.
func (s *Store) ListRuns(ctx context.Context, sc chat.Scope, conversationID string) ([]chat.Run, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+runCols+` FROM runs
		WHERE conversation_id = $1 AND tenant = $2 AND owner = $3 ORDER BY created_at, id`,
		conversationID, sc.Tenant, sc.User)
	if err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", conversationID, interpretError(err))
	}
	out, err := pgx.CollectRows(rows, collectRun)
	if err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", conversationID, interpretError(err))
	}
	return out, nil
}

// ClaimRun continues a run awaiting input, in one statement: the run's UPDATE
// is the compare-and-set (its row lock orders racing claimers, and the loser
// re-reads the status it changed), and the confirmation is marked applied
// only when that UPDATE matched. The paused state returned is the one the
// statement's snapshot read: whenever the UPDATE matches, no concurrent
// writer changed it (only a claim or an end does, and the run would then no
// longer await input).
func (s *Store) ClaimRun(ctx context.Context, p store.ClaimRunParams) (chat.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `WITH prev AS (
			SELECT state FROM runs WHERE id = $1 AND tenant = $2
		), r AS (
			UPDATE runs SET status = 'running', lease_owner = $3, lease_epoch = $4, state = NULL
			WHERE id = $1 AND tenant = $2 AND status = 'awaiting_input'
			AND ($5 = '' OR EXISTS (SELECT 1 FROM confirmations
				WHERE id = $5 AND run_id = $1 AND tenant = $2 AND status <> 'pending' AND applied_at IS NULL))
			RETURNING `+runCols+`
		), c AS (
			UPDATE confirmations SET applied_at = $6 WHERE id = $5 AND $5 <> '' AND EXISTS (SELECT 1 FROM r)
		)
		SELECT `+claimedCols+` FROM r, prev`,
		p.RunID, p.Tenant, p.Owner, p.Epoch, p.ConfirmationID, now()))
	if errors.Is(err, pgx.ErrNoRows) {
		var cur string
		if err = s.pool.QueryRow(ctx, `SELECT status FROM runs WHERE id = $1 AND tenant = $2`, p.RunID, p.Tenant).Scan(&cur); err == nil {
			err = fmt.Errorf("%w: run %s is %s, or the decision is pending or applied", store.ErrConflict, p.RunID, cur)
		}
	}
	if err != nil {
		return chat.Run{}, fmt.Errorf("claim run %s: %w", p.RunID, interpretError(err))
	}
	return r, nil
}

// DeleteRunsEndedBefore applies retention to finished runs, their events and
// (by cascade) their confirmations, in one statement.
func (s *Store) DeleteRunsEndedBefore(ctx context.Context, t time.Time) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `WITH gone AS (
			DELETE FROM runs WHERE ended_at IS NOT NULL AND ended_at < $1 RETURNING id
		), e AS (
			DELETE FROM events WHERE run_id IN (SELECT id FROM gone)
		)
		SELECT count(*) FROM gone`, ms(t)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("delete old runs: %w", interpretError(err))
	}
	return n, nil
}

// ---- confirmations ----

const confirmationCols = `id, tenant, owner, run_id, conversation_id, tool_call_id, tool_name, args, status, decided_args, reason, created_at, expires_at, decided_at, applied_at`

func scanConfirmation(row pgx.Row) (chat.Confirmation, error) {
	var c chat.Confirmation
	var args, decided []byte
	err := row.Scan(&c.ID, &c.Tenant, &c.Owner, &c.RunID, &c.ConversationID, &c.ToolCallID, &c.ToolName, &args, &c.Status,
		&decided, &c.Reason, &c.CreatedAt, &c.ExpiresAt, &c.DecidedAt, &c.AppliedAt)
	if err != nil {
		return chat.Confirmation{}, err
	}
	c.Args, c.DecidedArgs = json.RawMessage(args), rawJSON(decided)
	c.CreatedAt, c.ExpiresAt = c.CreatedAt.UTC(), c.ExpiresAt.UTC()
	if c.DecidedAt != nil {
		t := c.DecidedAt.UTC()
		c.DecidedAt = &t
	}
	if c.AppliedAt != nil {
		t := c.AppliedAt.UTC()
		c.AppliedAt = &t
	}
	return c, nil
}

func collectConfirmation(row pgx.CollectableRow) (chat.Confirmation, error) {
	return scanConfirmation(row)
}

// CreateConfirmation stores a pending confirmation; a missing run is ErrNotFound.
func (s *Store) CreateConfirmation(ctx context.Context, c chat.Confirmation) (chat.Confirmation, error) {
	c = newConfirmation(c, now())
	if err := insertConfirmation(ctx, s.pool, c); err != nil {
		return chat.Confirmation{}, fmt.Errorf("create confirmation: %w", interpretError(err))
	}
	return c, nil
}

// newConfirmation is c as stored when created at at.
func newConfirmation(c chat.Confirmation, at time.Time) chat.Confirmation {
	store.FillConfirmation(&c, at)
	return asStored(c)
}

// asStored is a new confirmation as PostgreSQL keeps it: times at
// millisecond precision, no decision.
func asStored(c chat.Confirmation) chat.Confirmation {
	c.CreatedAt, c.ExpiresAt = ms(c.CreatedAt), ms(c.ExpiresAt)
	c.DecidedArgs, c.Reason, c.DecidedAt, c.AppliedAt = nil, "", nil, nil // as stored: set only by a decision and its claim
	return c
}

// execer is the pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func insertConfirmation(ctx context.Context, db execer, c chat.Confirmation) error {
	_, err := db.Exec(ctx, `INSERT INTO confirmations (id, tenant, owner, run_id, conversation_id, tool_call_id, tool_name, args, status, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		c.ID, c.Tenant, c.Owner, c.RunID, c.ConversationID, c.ToolCallID, c.ToolName, []byte(c.Args), c.Status, c.CreatedAt, c.ExpiresAt)
	return err
}

// GetConfirmation reads one of sc's confirmations.
func (s *Store) GetConfirmation(ctx context.Context, sc chat.Scope, id string) (chat.Confirmation, error) {
	c, err := scanConfirmation(s.pool.QueryRow(ctx, `SELECT `+confirmationCols+` FROM confirmations WHERE id = $1 AND tenant = $2 AND owner = $3`,
		id, sc.Tenant, sc.User))
	if err != nil {
		return chat.Confirmation{}, fmt.Errorf("get confirmation %s: %w", id, interpretError(err))
	}
	return c, nil
}

// DecideConfirmation records the one decision that wins. The row is locked
// (SELECT … FOR UPDATE) while store.ApplyDecision judges it, so racing
// decisions from any replicas are judged one after another.
func (s *Store) DecideConfirmation(ctx context.Context, sc chat.Scope, id string, d chat.Decision) (chat.Confirmation, error) {
	var c chat.Confirmation
	var outcome error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		c, err = scanConfirmation(tx.QueryRow(ctx, `SELECT `+confirmationCols+` FROM confirmations
			WHERE id = $1 AND tenant = $2 AND owner = $3 FOR UPDATE`, id, sc.Tenant, sc.User))
		if err != nil {
			return err
		}
		var changed bool
		if changed, outcome = store.ApplyDecision(&c, d); !changed {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE confirmations SET status = $2, decided_args = $3, reason = $4, decided_at = $5 WHERE id = $1`,
			id, c.Status, nullJSON(c.DecidedArgs), c.Reason, *c.DecidedAt)
		return err
	})
	if err != nil {
		return chat.Confirmation{}, fmt.Errorf("decide confirmation %s: %w", id, interpretError(err))
	}
	if outcome != nil {
		return c, fmt.Errorf("decide confirmation %s: %w", id, outcome)
	}
	return c, nil
}

// ListConfirmations lists sc's confirmations, newest first.
func (s *Store) ListConfirmations(ctx context.Context, sc chat.Scope, status string) ([]chat.Confirmation, error) {
	q := `SELECT ` + confirmationCols + ` FROM confirmations WHERE tenant = $1 AND owner = $2`
	args := []any{sc.Tenant, sc.User}
	if status != "" {
		q += ` AND status = $3`
		args = append(args, status)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT 500`
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list confirmations: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, collectConfirmation)
	if err != nil {
		return nil, fmt.Errorf("list confirmations: %w", interpretError(err))
	}
	return out, nil
}

// UnappliedDecisions finds decisions no replica acted on, through the partial
// index of decided, unapplied confirmations.
func (s *Store) UnappliedDecisions(ctx context.Context, before time.Time, limit int) ([]chat.Confirmation, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.`+strings.ReplaceAll(confirmationCols, ", ", ", c.")+`
		FROM confirmations c JOIN runs r ON r.id = c.run_id
		WHERE c.status <> 'pending' AND c.applied_at IS NULL AND c.decided_at < $1 AND r.status = 'awaiting_input'
		ORDER BY c.decided_at LIMIT $2`, ms(before), limit)
	if err != nil {
		return nil, fmt.Errorf("unapplied decisions: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, collectConfirmation)
	if err != nil {
		return nil, fmt.Errorf("unapplied decisions: %w", interpretError(err))
	}
	return out, nil
}

// ExpireConfirmations marks overdue pending confirmations expired, in one
// statement, and returns them.
func (s *Store) ExpireConfirmations(ctx context.Context, at time.Time) ([]chat.Confirmation, error) {
	at = ms(at)
	rows, err := s.pool.Query(ctx, `UPDATE confirmations SET status = 'expired', decided_at = $1
		WHERE status = 'pending' AND expires_at < $1 RETURNING `+confirmationCols, at)
	if err != nil {
		return nil, fmt.Errorf("expire confirmations: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, collectConfirmation)
	if err != nil {
		return nil, fmt.Errorf("expire confirmations: %w", interpretError(err))
	}
	return out, nil
}
