-- Mirrors pgstore's 0006_run_trace.sql: a run names its W3C trace (see
-- chat.Run.TraceID) and the span its continuations hang under. Runs stored
-- before get a random trace id, so every run has one.
ALTER TABLE runs ADD COLUMN trace_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN span_id TEXT NOT NULL DEFAULT '';
UPDATE runs SET trace_id = lower(hex(randomblob(16)));
