-- The event log's rows from now on, keyed by a thread number instead of the
-- 36-character conversation id. A batch at thousands of live streams writes
-- a row or two per thread, so each commit dirties the (thread, seq) index
-- leaf holding each thread's tail: with text keys an index entry took about
-- 47 bytes, a thread of a few hundred rows a leaf of its own, and the
-- index's hot leaves outgrew the write connection's page cache at 5000
-- streams; with integer keys an entry takes about 12 (docs/benchmarks.md,
-- "eleventh round: cheaper event rows").
--
-- event_threads numbers the threads, for good: deleting a conversation
-- deletes its rows, not its number, so no process ever holds a stale one.
CREATE TABLE event_threads (
    id         INTEGER PRIMARY KEY,
    thread_id  TEXT NOT NULL UNIQUE
);

-- Columns as in events (0001, 0004) but thread. Rows are appended in rowid
-- order, so a batch dirties few table pages; the (thread, seq) index is what
-- every read uses.
CREATE TABLE event_rows (
    id         INTEGER PRIMARY KEY,
    thread     INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    seq_end    INTEGER,
    tenant     TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    type       TEXT NOT NULL,
    turn       TEXT NOT NULL DEFAULT '',
    iteration  INTEGER NOT NULL DEFAULT 0,
    step       TEXT NOT NULL DEFAULT '',
    at         INTEGER NOT NULL,
    payload    TEXT NOT NULL
);
CREATE UNIQUE INDEX event_rows_by_thread ON event_rows (thread, seq);

-- The rows of events stay where they are (copying a large log would hold
-- the upgrade for as long): they are read beside event_rows, and a row of
-- event_rows may not overlap one of events either. Nothing writes events
-- any more, so a thread's last seq there, read once when the writer first
-- numbers the thread, bounds what needs that check: only a row starting at
-- or before it (a retry of a batch written before the upgrade) is checked.
