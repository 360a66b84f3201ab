-- Mirrors pgstore's 0008_steering.sql. Conversations people steer:
--   * a message tree: every message names the message it follows
--     (parent_id, '' for a first message), a conversation its active leaf,
--     and a run the message its first message follows (edit, regenerate);
--   * idempotency keys of run-starting requests, per principal;
--   * feedback on messages;
--   * inputs queued behind a conversation's active run (double-texting);
--   * the AG-UI shared state of a thread.
ALTER TABLE messages ADD COLUMN parent_id TEXT NOT NULL DEFAULT '';
ALTER TABLE message_archive ADD COLUMN parent_id TEXT NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN active_leaf TEXT NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN state TEXT;
ALTER TABLE runs ADD COLUMN parent_id TEXT NOT NULL DEFAULT '';

-- Conversations stored before the tree are one line: each message follows
-- the one before it, except a user message that regenerated a run, which
-- follows what that run's first message followed (a sibling of it).
UPDATE messages SET parent_id = COALESCE((
    SELECT p.id FROM messages p
    WHERE p.conversation_id = messages.conversation_id
      AND (p.created_at < messages.created_at OR (p.created_at = messages.created_at AND p.id < messages.id))
    ORDER BY p.created_at DESC, p.id DESC LIMIT 1), '');
UPDATE messages SET parent_id = COALESCE((
    SELECT f.parent_id FROM messages f
    WHERE f.conversation_id = messages.conversation_id
      AND f.run_id = json_extract(messages.metadata, '$.regenerates')
    ORDER BY f.created_at, f.id LIMIT 1), parent_id)
WHERE role = 'user' AND metadata IS NOT NULL AND json_valid(metadata)
  AND json_type(metadata) = 'object' AND json_extract(metadata, '$.regenerates') IS NOT NULL;
UPDATE conversations SET active_leaf = COALESCE((
    SELECT m.id FROM messages m WHERE m.conversation_id = conversations.id
    ORDER BY m.created_at DESC, m.id DESC LIMIT 1), '');
UPDATE runs SET parent_id = COALESCE((
    SELECT m.parent_id FROM messages m WHERE m.conversation_id = runs.conversation_id AND m.run_id = runs.id
    ORDER BY m.created_at, m.id LIMIT 1), '');
CREATE INDEX messages_by_parent ON messages (conversation_id, parent_id);

-- A key is the principal's: (tenant, owner, key). body_hash is the SHA-256
-- of the request as the key first came with it; run_id the run it started.
CREATE TABLE idempotency_keys (
    tenant           TEXT NOT NULL,
    owner            TEXT NOT NULL,
    key              TEXT NOT NULL,
    body_hash        TEXT NOT NULL,
    run_id           TEXT NOT NULL DEFAULT '',
    conversation_id  TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    PRIMARY KEY (tenant, owner, key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);

CREATE TABLE feedback (
    message_id       TEXT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    tenant           TEXT NOT NULL,
    owner            TEXT NOT NULL,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    run_id           TEXT NOT NULL DEFAULT '',
    agent_id         TEXT NOT NULL DEFAULT '',
    rating           TEXT NOT NULL,
    comment          TEXT NOT NULL DEFAULT '',
    tags             TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX feedback_by_tenant ON feedback (tenant, updated_at DESC, message_id DESC);

-- Inputs waiting for a conversation's active run to end, started in order
-- (created_at, id) by whichever replica ends that run or sweeps.
CREATE TABLE run_queue (
    id               TEXT PRIMARY KEY,
    tenant           TEXT NOT NULL,
    owner            TEXT NOT NULL,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    request          TEXT NOT NULL,
    created_at       INTEGER NOT NULL
);
CREATE INDEX run_queue_by_conversation ON run_queue (conversation_id, created_at, id);
