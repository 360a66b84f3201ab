-- Mirrors pgstore's 0007_agents.sql. Agents as versioned resources: an
-- agent row names its published and its latest version; each version is an
-- immutable definition (JSON, package agent's shape). A conversation is
-- bound to its agent at creation, a run names the agent version it used,
-- a knowledge document belongs to a collection, and a tenant may name its
-- default agent.
CREATE TABLE agents (
    id              TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    created_by      TEXT NOT NULL,
    version         INTEGER NOT NULL,
    latest_version  INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    archived_at     INTEGER
);
CREATE INDEX agents_by_tenant ON agents (tenant, created_at DESC, id DESC);

CREATE TABLE agent_versions (
    agent_id      TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    version       INTEGER NOT NULL,
    tenant        TEXT NOT NULL,
    spec          TEXT NOT NULL,
    changes       TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    published_at  INTEGER,
    PRIMARY KEY (agent_id, version)
);

CREATE TABLE tenant_settings (
    tenant            TEXT PRIMARY KEY,
    default_agent_id  TEXT NOT NULL DEFAULT '',
    updated_by        TEXT NOT NULL,
    updated_at        INTEGER NOT NULL
);

ALTER TABLE conversations ADD COLUMN agent_id TEXT NOT NULL DEFAULT '';
CREATE INDEX conversations_by_agent ON conversations (tenant, owner, agent_id, updated_at DESC, id DESC);

ALTER TABLE runs ADD COLUMN agent_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN agent_version INTEGER NOT NULL DEFAULT 0;

ALTER TABLE knowledge_documents ADD COLUMN collection TEXT NOT NULL DEFAULT 'default';
CREATE INDEX knowledge_documents_by_collection ON knowledge_documents (tenant, collection, created_at DESC, id DESC);
