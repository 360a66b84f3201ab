-- Mirrors sqlitestore's 0008_steering.sql. Conversations people steer:
--   * a message tree: every message names the message it follows
--     (parent_id, '' for a first message), a conversation its active leaf,
--     and a run the message its first message follows (edit, regenerate);
--   * idempotency keys of run-starting requests, per principal;
--   * feedback on messages;
--   * inputs queued behind a conversation's active run (double-texting);
--   * the AG-UI shared state of a thread.
ALTER TABLE messages ADD COLUMN parent_id text NOT NULL DEFAULT '';
ALTER TABLE message_archive ADD COLUMN parent_id text NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN active_leaf text NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN state json;
ALTER TABLE runs ADD COLUMN parent_id text NOT NULL DEFAULT '';

-- Conversations stored before the tree are one line: each message follows
-- the one before it, except a user message that regenerated a run, which
-- follows what that run's first message followed (a sibling of it).
UPDATE messages m SET parent_id = p.prev
FROM (SELECT id, lag(id) OVER (PARTITION BY conversation_id ORDER BY created_at, id) AS prev FROM messages) p
WHERE p.id = m.id AND p.prev IS NOT NULL;
UPDATE messages u SET parent_id = COALESCE((
    SELECT f.parent_id FROM messages f
    WHERE f.conversation_id = u.conversation_id AND f.run_id = u.metadata->>'regenerates'
    ORDER BY f.created_at, f.id LIMIT 1), u.parent_id)
WHERE u.role = 'user' AND u.metadata IS NOT NULL AND json_typeof(u.metadata) = 'object'
  AND u.metadata->>'regenerates' IS NOT NULL;
UPDATE conversations c SET active_leaf = COALESCE((
    SELECT m.id FROM messages m WHERE m.conversation_id = c.id
    ORDER BY m.created_at DESC, m.id DESC LIMIT 1), '');
UPDATE runs r SET parent_id = COALESCE((
    SELECT m.parent_id FROM messages m WHERE m.conversation_id = r.conversation_id AND m.run_id = r.id
    ORDER BY m.created_at, m.id LIMIT 1), '');
CREATE INDEX messages_by_parent ON messages (conversation_id, parent_id);

-- A key is the principal's: (tenant, owner, key). body_hash is the SHA-256
-- of the request as the key first came with it; run_id the run it started.
CREATE TABLE idempotency_keys (
    tenant           text NOT NULL,
    owner            text NOT NULL,
    key              text NOT NULL,
    body_hash        text NOT NULL,
    run_id           text NOT NULL DEFAULT '',
    conversation_id  text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant, owner, key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);

CREATE TABLE feedback (
    message_id       text PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    tenant           text NOT NULL,
    owner            text NOT NULL,
    conversation_id  text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    run_id           text NOT NULL DEFAULT '',
    agent_id         text NOT NULL DEFAULT '',
    rating           text NOT NULL,
    comment          text NOT NULL DEFAULT '',
    tags             json,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE INDEX feedback_by_tenant ON feedback (tenant, updated_at DESC, message_id DESC);

-- Inputs waiting for a conversation's active run to end, started in order
-- (created_at, id) by whichever replica ends that run or sweeps.
CREATE TABLE run_queue (
    id               text PRIMARY KEY,
    tenant           text NOT NULL,
    owner            text NOT NULL,
    conversation_id  text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    request          json NOT NULL,
    created_at       timestamptz NOT NULL
);
CREATE INDEX run_queue_by_conversation ON run_queue (conversation_id, created_at, id);
