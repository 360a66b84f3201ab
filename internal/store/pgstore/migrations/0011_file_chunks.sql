-- File storage in PostgreSQL itself (FileStorage), for replicas that share
-- a database and no object store. An object is a row in file_objects and
-- its bytes in file_chunks of at most 256 KiB each, so a Range request reads
-- the chunks it covers rather than the whole file, and no value comes near
-- bytea's limits. An object's row and its chunks are written in one
-- transaction: a reader sees a whole object or none.
--
-- Replaces 0009's file_blobs (one bytea per file), which nothing wrote.
DROP TABLE file_blobs;

CREATE TABLE file_objects (
    key         text PRIMARY KEY,
    size        bigint NOT NULL,
    chunk_size  integer NOT NULL
);

CREATE TABLE file_chunks (
    key   text NOT NULL REFERENCES file_objects (key) ON DELETE CASCADE,
    n     integer NOT NULL,
    data  bytea NOT NULL,
    PRIMARY KEY (key, n)
);
-- Images and PDFs are compressed already: storing chunks uncompressed
-- saves the attempt.
ALTER TABLE file_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
