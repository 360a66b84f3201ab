-- Mirrors sqlitestore's 0001_init.sql. Times are timestamptz written at
-- millisecond precision; ids are UUIDv7 text. JSON columns are json, not
-- jsonb: json keeps the exact bytes written (the store promises Metadata,
-- Parts, State and Args back byte for byte) while still refusing non-JSON.
CREATE TABLE conversations (
    id          text PRIMARY KEY,
    tenant      text NOT NULL,
    owner       text NOT NULL,
    title       text NOT NULL DEFAULT '',
    engine      text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);
-- ListConversations: keyset paging by (updated_at, id), newest first.
CREATE INDEX conversations_by_owner ON conversations (tenant, owner, updated_at DESC, id DESC);

CREATE TABLE messages (
    id               text PRIMARY KEY,
    tenant           text NOT NULL,
    conversation_id  text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role             text NOT NULL,
    content          text NOT NULL,
    parts            json,
    metadata         json,
    run_id           text NOT NULL DEFAULT '',
    tool_name        text NOT NULL DEFAULT '',
    tool_call_id     text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL
);
-- ListMessages: keyset paging by (created_at, id), oldest first; the partial
-- index serves the tool filter (seed 002) without scanning chat turns.
CREATE INDEX messages_by_conversation ON messages (conversation_id, created_at, id);
CREATE INDEX messages_by_tool ON messages (conversation_id, tool_name, created_at, id) WHERE tool_name <> '';

CREATE TABLE runs (
    id               text PRIMARY KEY,
    tenant           text NOT NULL,
    owner            text NOT NULL,
    conversation_id  text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn_id          text NOT NULL,
    status           text NOT NULL,
    input            text NOT NULL,
    engine           text NOT NULL DEFAULT '',
    model            text NOT NULL DEFAULT '',
    error_code       text,
    error_message    text,
    usage            json,
    state            json,
    created_at       timestamptz NOT NULL,
    started_at       timestamptz NOT NULL,
    ended_at         timestamptz,
    lease_owner      text NOT NULL DEFAULT '',
    lease_until      timestamptz NOT NULL DEFAULT '0001-01-01 00:00:00+00' -- Go's zero time: never leased
);
-- One active run per conversation, enforced by the database itself: racing
-- starts on several replicas meet here, and the loser gets 23505.
CREATE UNIQUE INDEX runs_one_active ON runs (conversation_id) WHERE status IN ('queued', 'running', 'awaiting_input');
CREATE INDEX runs_by_conversation ON runs (conversation_id, created_at, id);
-- ExpiredLeases scans only active runs, by lease end.
CREATE INDEX runs_by_lease ON runs (lease_until) WHERE status IN ('queued', 'running', 'awaiting_input');
-- Retention (DeleteRunsEndedBefore) scans only finished runs, by end.
CREATE INDEX runs_by_end ON runs (ended_at) WHERE ended_at IS NOT NULL;

-- The event log. No foreign key: batches are written off the request path, and
-- a conversation deleted meanwhile must not fail the whole batch. The primary
-- key is the replay index: (thread_id, seq) ranges after a Last-Event-ID.
CREATE TABLE events (
    thread_id  text NOT NULL,
    seq        bigint NOT NULL,
    tenant     text NOT NULL,
    run_id     text NOT NULL,
    type       text NOT NULL,
    turn       text NOT NULL DEFAULT '',
    iteration  integer NOT NULL DEFAULT 0,
    step       text NOT NULL DEFAULT '',
    at         timestamptz NOT NULL,
    payload    json NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
-- Retention deletes a finished run's events by run.
CREATE INDEX events_by_run ON events (run_id, seq);

CREATE TABLE confirmations (
    id               text PRIMARY KEY,
    tenant           text NOT NULL,
    owner            text NOT NULL,
    run_id           text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    conversation_id  text NOT NULL,
    tool_call_id     text NOT NULL,
    tool_name        text NOT NULL,
    args             json NOT NULL,
    status           text NOT NULL,
    decided_args     json,
    reason           text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    decided_at       timestamptz
);
-- ListConfirmations, newest first, with and without a status filter.
CREATE INDEX confirmations_by_owner ON confirmations (tenant, owner, created_at DESC, id DESC);
CREATE INDEX confirmations_by_owner_status ON confirmations (tenant, owner, status, created_at DESC, id DESC);
-- ExpireConfirmations scans only pending ones, by expiry.
CREATE INDEX confirmations_pending ON confirmations (expires_at) WHERE status = 'pending';
-- The run's cascade delete finds its confirmations without a scan.
CREATE INDEX confirmations_by_run ON confirmations (run_id);
