-- Uploaded files' records (their bytes are in file storage under sha256)
-- and which conversations reference them, so deleting a conversation frees
-- the files only it used. file_blobs holds the bytes themselves when
-- PostgreSQL is the file storage (package pgfile), so replicas sharing the
-- database need nothing more to share files.
CREATE TABLE files (
    id             text PRIMARY KEY,
    tenant         text NOT NULL,
    owner          text NOT NULL,
    name           text NOT NULL,
    media_type     text NOT NULL,
    size           bigint NOT NULL,
    sha256         text NOT NULL,
    created_at     timestamptz NOT NULL,
    referenced_at  timestamptz
);
CREATE INDEX files_by_owner ON files (tenant, owner, created_at DESC, id DESC);
CREATE INDEX files_by_sha256 ON files (sha256);

CREATE TABLE file_refs (
    file_id          text NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    conversation_id  text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    PRIMARY KEY (file_id, conversation_id)
);
CREATE INDEX file_refs_by_conversation ON file_refs (conversation_id);

CREATE TABLE file_blobs (
    key   text PRIMARY KEY,
    size  bigint NOT NULL,
    data  bytea NOT NULL
);
