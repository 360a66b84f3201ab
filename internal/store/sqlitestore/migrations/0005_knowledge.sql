-- Seed 002 context management: the knowledge base and memory (full-text
-- search over pre-tokenised terms: words and CJK bigrams made in Go, so the
-- default unicode61 tokenizer only splits on the spaces between them),
-- out-of-line payloads, and compaction with its archive.
CREATE TABLE knowledge_documents (
    id          TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL,
    owner       TEXT NOT NULL,
    source      TEXT NOT NULL,
    media_type  TEXT NOT NULL,
    metadata    TEXT,
    bytes       INTEGER NOT NULL,
    chunks      INTEGER NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX knowledge_documents_by_tenant ON knowledge_documents (tenant, created_at DESC, id DESC);

CREATE TABLE knowledge_chunks (
    rowid        INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    tenant       TEXT NOT NULL,
    document_id  TEXT NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    ordinal      INTEGER NOT NULL,
    content      TEXT NOT NULL,
    terms        TEXT NOT NULL,
    embedding    TEXT
);
CREATE INDEX knowledge_chunks_by_document ON knowledge_chunks (document_id, ordinal);
CREATE INDEX knowledge_chunks_by_tenant ON knowledge_chunks (tenant) WHERE embedding IS NOT NULL;

-- An external-content FTS5 index over the terms; triggers keep it in step,
-- including deletes cascaded from a document.
CREATE VIRTUAL TABLE knowledge_fts USING fts5(terms, content='knowledge_chunks', content_rowid='rowid');
CREATE TRIGGER knowledge_chunks_ai AFTER INSERT ON knowledge_chunks BEGIN
    INSERT INTO knowledge_fts (rowid, terms) VALUES (new.rowid, new.terms);
END;
CREATE TRIGGER knowledge_chunks_ad AFTER DELETE ON knowledge_chunks BEGIN
    INSERT INTO knowledge_fts (knowledge_fts, rowid, terms) VALUES ('delete', old.rowid, old.terms);
END;

CREATE TABLE memory_entries (
    rowid            INTEGER PRIMARY KEY,
    message_id       TEXT NOT NULL UNIQUE,
    tenant           TEXT NOT NULL,
    owner            TEXT NOT NULL,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role             TEXT NOT NULL,
    content          TEXT NOT NULL,
    terms            TEXT NOT NULL,
    created_at       INTEGER NOT NULL
);
CREATE INDEX memory_entries_by_conversation ON memory_entries (conversation_id);
CREATE VIRTUAL TABLE memory_fts USING fts5(terms, content='memory_entries', content_rowid='rowid');
CREATE TRIGGER memory_entries_ai AFTER INSERT ON memory_entries BEGIN
    INSERT INTO memory_fts (rowid, terms) VALUES (new.rowid, new.terms);
END;
CREATE TRIGGER memory_entries_ad AFTER DELETE ON memory_entries BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, terms) VALUES ('delete', old.rowid, old.terms);
END;

CREATE TABLE blobs (
    id               TEXT PRIMARY KEY,
    tenant           TEXT NOT NULL,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    data             TEXT NOT NULL,
    created_at       INTEGER NOT NULL
);
CREATE INDEX blobs_by_conversation ON blobs (conversation_id);

CREATE TABLE compactions (
    id               TEXT PRIMARY KEY,
    tenant           TEXT NOT NULL,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    summary          TEXT NOT NULL,
    archived         INTEGER NOT NULL,
    through_id       TEXT NOT NULL,
    through_at       INTEGER NOT NULL,
    created_at       INTEGER NOT NULL
);
CREATE INDEX compactions_by_conversation ON compactions (conversation_id, created_at DESC, id DESC);

-- Archived messages, copied unchanged (same ids and times) by a compaction.
CREATE TABLE message_archive (
    id               TEXT NOT NULL,
    tenant           TEXT NOT NULL,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    compaction_id    TEXT NOT NULL REFERENCES compactions (id) ON DELETE CASCADE,
    role             TEXT NOT NULL,
    content          TEXT NOT NULL,
    parts            TEXT,
    metadata         TEXT,
    run_id           TEXT NOT NULL DEFAULT '',
    tool_name        TEXT NOT NULL DEFAULT '',
    tool_call_id     TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, id)
);
CREATE INDEX message_archive_by_time ON message_archive (conversation_id, created_at, id);
