-- Agents as versioned resources: an agent row names its published and its
-- latest version; each version is an immutable definition (JSON, package
-- agent's shape, kept byte for byte). A conversation is bound to its agent
-- at creation, a run names the agent version it used, a knowledge document
-- belongs to a collection, and a tenant may name its default agent.
CREATE TABLE agents (
    id              text PRIMARY KEY,
    tenant          text NOT NULL,
    created_by      text NOT NULL,
    version         integer NOT NULL,
    latest_version  integer NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    archived_at     timestamptz
);
CREATE INDEX agents_by_tenant ON agents (tenant, created_at DESC, id DESC);

CREATE TABLE agent_versions (
    agent_id      text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    version       integer NOT NULL,
    tenant        text NOT NULL,
    spec          json NOT NULL,
    changes       json NOT NULL,
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL,
    published_at  timestamptz,
    PRIMARY KEY (agent_id, version)
);

CREATE TABLE tenant_settings (
    tenant            text PRIMARY KEY,
    default_agent_id  text NOT NULL DEFAULT '',
    updated_by        text NOT NULL,
    updated_at        timestamptz NOT NULL
);

ALTER TABLE conversations ADD COLUMN agent_id text NOT NULL DEFAULT '';
CREATE INDEX conversations_by_agent ON conversations (tenant, owner, agent_id, updated_at DESC, id DESC);

ALTER TABLE runs ADD COLUMN agent_id text NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN agent_version integer NOT NULL DEFAULT 0;

ALTER TABLE knowledge_documents ADD COLUMN collection text NOT NULL DEFAULT 'default';
CREATE INDEX knowledge_documents_by_collection ON knowledge_documents (tenant, collection, created_at DESC, id DESC);
