-- A row of the event log may hold a range of deltas, seq..seq_end (see
-- store.PackEvents). NULL means a row of one event (seq_end = seq), so adding
-- the column rewrites nothing. No new index: rows of a thread never overlap,
-- so the (thread_id, seq) primary key orders them by seq_end too.
ALTER TABLE events ADD COLUMN seq_end bigint;
