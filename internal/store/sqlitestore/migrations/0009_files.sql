-- Mirrors pgstore's 0009_files.sql. Uploaded files' records (their bytes
-- are in file storage under sha256) and which conversations reference them,
-- so deleting a conversation frees the files only it used.
CREATE TABLE files (
    id             TEXT PRIMARY KEY,
    tenant         TEXT NOT NULL,
    owner          TEXT NOT NULL,
    name           TEXT NOT NULL,
    media_type     TEXT NOT NULL,
    size           INTEGER NOT NULL,
    sha256         TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    referenced_at  INTEGER
);
CREATE INDEX files_by_owner ON files (tenant, owner, created_at DESC, id DESC);
CREATE INDEX files_by_sha256 ON files (sha256);

CREATE TABLE file_refs (
    file_id          TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    PRIMARY KEY (file_id, conversation_id)
);
CREATE INDEX file_refs_by_conversation ON file_refs (conversation_id);
