-- A row of the event log may hold a range of deltas, seq..seq_end (see
-- store.PackEvents). NULL means a row of one event (seq_end = seq), so the
-- rows already stored need no rewrite. No new index: rows of a thread never
-- overlap, so the (thread, seq) index orders them by seq_end too.
ALTER TABLE events ADD COLUMN seq_end INTEGER;
