-- Seed 002 context management: the knowledge base and memory (full-text
-- search over pre-tokenised terms: words and CJK bigrams made in Go, which the
-- 'simple' configuration keeps as they are), out-of-line payloads, and
-- compaction with its archive.
CREATE TABLE knowledge_documents (
    id          text PRIMARY KEY,
    tenant      text NOT NULL,
    owner       text NOT NULL,
    source      text NOT NULL,
    media_type  text NOT NULL,
    metadata    json,
    bytes       integer NOT NULL,
    chunks      integer NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX knowledge_documents_by_tenant ON knowledge_documents (tenant, created_at DESC, id DESC);

CREATE TABLE knowledge_chunks (
    id           text PRIMARY KEY,
    tenant       text NOT NULL,
    document_id  text NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    ordinal      integer NOT NULL,
    content      text NOT NULL,
    terms        text NOT NULL,
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('simple', terms)) STORED,
    embedding    real[]
);
CREATE INDEX knowledge_chunks_by_document ON knowledge_chunks (document_id, ordinal);
CREATE INDEX knowledge_chunks_tsv ON knowledge_chunks USING gin (tsv);
CREATE INDEX knowledge_chunks_by_tenant ON knowledge_chunks (tenant) WHERE embedding IS NOT NULL;

CREATE TABLE memory_entries (
    message_id       text PRIMARY KEY,
    tenant           text NOT NULL,
    owner            text NOT NULL,
    conversation_id  text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role             text NOT NULL,
    content          text NOT NULL,
    terms            text NOT NULL,
    tsv              tsvector GENERATED ALWAYS AS (to_tsvector('simple', terms)) STORED,
    created_at       timestamptz NOT NULL
);
CREATE INDEX memory_entries_by_conversation ON memory_entries (conversation_id);
CREATE INDEX memory_entries_tsv ON memory_entries USING gin (tsv);

CREATE TABLE blobs (
    id               text PRIMARY KEY,
    tenant           text NOT NULL,
    conversation_id  text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    data             json NOT NULL,
    created_at       timestamptz NOT NULL
);
CREATE INDEX blobs_by_conversation ON blobs (conversation_id);

CREATE TABLE compactions (
    id               text PRIMARY KEY,
    tenant           text NOT NULL,
    conversation_id  text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    summary          text NOT NULL,
    archived         integer NOT NULL,
    through_id       text NOT NULL,
    through_at       timestamptz NOT NULL,
    created_at       timestamptz NOT NULL
);
CREATE INDEX compactions_by_conversation ON compactions (conversation_id, created_at DESC, id DESC);

CREATE TABLE message_archive (
    id               text NOT NULL,
    tenant           text NOT NULL,
    conversation_id  text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    compaction_id    text NOT NULL REFERENCES compactions (id) ON DELETE CASCADE,
    role             text NOT NULL,
    content          text NOT NULL,
    parts            json,
    metadata         json,
    run_id           text NOT NULL DEFAULT '',
    tool_name        text NOT NULL DEFAULT '',
    tool_call_id     text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (conversation_id, id)
);
CREATE INDEX message_archive_by_time ON message_archive (conversation_id, created_at, id);
