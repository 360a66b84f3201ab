// Package pgstore is the scale-out store.Store: PostgreSQL through pgx v5 and
// a pgxpool connection pool, shared by every replica.
//
// Semantics mirror sqlitestore exactly (both pass storetest unchanged); what
// differs is how the database is used:
//
//   - Rules live in the schema where they can: one active run per conversation
//     is a partial unique index, so racing starts on several replicas meet in
//     the database and the loser gets 23505, answered as *store.BusyError.
//   - Most writes are one statement (data-modifying CTEs instead of
//     read-then-write transactions), so a call is one round trip and holds no
//     row lock across the network. DecideConfirmation is the exception: it
//     reads with SELECT … FOR UPDATE so that store.ApplyDecision, the rule every
//     backend shares, decides under the row lock.
//   - AppendEvents, on the token path, sends a whole batch as one INSERT … SELECT
//     FROM unnest(arrays): one round trip and one statement whatever the batch
//     size, with no parameter-count limit.
//   - Reads that must first check the Scope (ListMessages, ListEvents) send the
//     check and the query as one pipelined batch.
//
// Times are timestamptz truncated to milliseconds before writing, so values
// round-trip exactly as in SQLite. JSON columns use the json type (not jsonb),
// which keeps the bytes written while still refusing non-JSON.
//
// Migrations are embedded and versioned in schema_migrations. They run in one
// transaction under a pg_advisory_xact_lock keyed by the search_path, so
// replicas starting together apply them once, and a failed migration leaves
// nothing behind.
//
// Invariants:
//   - A Store is safe for concurrent use, within a process and across
//     replicas: the database, not the process, decides races.
//   - Driver errors become store sentinels in one place, interpretError.
//   - The Store owns three pools: the main one, and two small ones, for the
//     replica heartbeat and for the event log's appends, so that neither
//     queues behind a burst of starts in the main one; Close closes all three.
//   - Security: an unparsable URL is reported without quoting it, since it
//     may carry the password.
package pgstore
