-- A run names its W3C trace (see chat.Run.TraceID) and the span its
-- continuations hang under. Runs stored before get a random trace id (32 hex
-- digits of an md5), so every run has one.
ALTER TABLE runs ADD COLUMN trace_id text NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN span_id text NOT NULL DEFAULT '';
UPDATE runs SET trace_id = md5(random()::text || id);
