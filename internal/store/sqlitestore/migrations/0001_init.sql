-- Times are Unix milliseconds (UTC). Ids are UUIDv7 text.
CREATE TABLE conversations (
    id          TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL,
    owner       TEXT NOT NULL,
    title       TEXT NOT NULL DEFAULT '',
    engine      TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX conversations_by_owner ON conversations (tenant, owner, updated_at DESC, id DESC);

CREATE TABLE messages (
    id               TEXT PRIMARY KEY,
    tenant           TEXT NOT NULL,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role             TEXT NOT NULL,
    content          TEXT NOT NULL,
    parts            TEXT,
    metadata         TEXT,
    run_id           TEXT NOT NULL DEFAULT '',
    tool_name        TEXT NOT NULL DEFAULT '',
    tool_call_id     TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL
);
CREATE INDEX messages_by_conversation ON messages (conversation_id, created_at, id);
CREATE INDEX messages_by_tool ON messages (conversation_id, tool_name, created_at, id) WHERE tool_name <> '';

CREATE TABLE runs (
    id               TEXT PRIMARY KEY,
    tenant           TEXT NOT NULL,
    owner            TEXT NOT NULL,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn_id          TEXT NOT NULL,
    status           TEXT NOT NULL,
    input            TEXT NOT NULL,
    engine           TEXT NOT NULL DEFAULT '',
    model            TEXT NOT NULL DEFAULT '',
    error_code       TEXT,
    error_message    TEXT,
    usage            TEXT,
    state            TEXT,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER NOT NULL,
    ended_at         INTEGER,
    lease_owner      TEXT NOT NULL DEFAULT '',
    lease_until      INTEGER NOT NULL DEFAULT 0
);
-- One active run per conversation, enforced by the database itself.
CREATE UNIQUE INDEX runs_one_active ON runs (conversation_id) WHERE status IN ('queued', 'running', 'awaiting_input');
CREATE INDEX runs_by_conversation ON runs (conversation_id, created_at, id);
CREATE INDEX runs_by_lease ON runs (lease_until) WHERE status IN ('queued', 'running', 'awaiting_input');
CREATE INDEX runs_by_end ON runs (ended_at) WHERE ended_at IS NOT NULL;

-- The event log. Rows are appended in rowid order, so a batch of token
-- events from many threads dirties few table pages; the (thread, seq) index
-- is what every read uses. No foreign key: batches are written off the
-- request path, and a conversation deleted meanwhile must not fail a batch.
CREATE TABLE events (
    id         INTEGER PRIMARY KEY,
    thread_id  TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    tenant     TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    type       TEXT NOT NULL,
    turn       TEXT NOT NULL DEFAULT '',
    iteration  INTEGER NOT NULL DEFAULT 0,
    step       TEXT NOT NULL DEFAULT '',
    at         INTEGER NOT NULL,
    payload    TEXT NOT NULL
);
CREATE UNIQUE INDEX events_by_thread ON events (thread_id, seq);

CREATE TABLE confirmations (
    id               TEXT PRIMARY KEY,
    tenant           TEXT NOT NULL,
    owner            TEXT NOT NULL,
    run_id           TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    conversation_id  TEXT NOT NULL,
    tool_call_id     TEXT NOT NULL,
    tool_name        TEXT NOT NULL,
    args             TEXT NOT NULL,
    status           TEXT NOT NULL,
    decided_args     TEXT,
    reason           TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL,
    decided_at       INTEGER
);
CREATE INDEX confirmations_by_owner ON confirmations (tenant, owner, status, created_at DESC);
CREATE INDEX confirmations_pending ON confirmations (expires_at) WHERE status = 'pending';
