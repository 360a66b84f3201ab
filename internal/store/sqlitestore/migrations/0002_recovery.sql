-- Mirrors pgstore's 0002_recovery.sql: a stored cancel request, and when a
-- decision was applied to its run.
ALTER TABLE runs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE confirmations ADD COLUMN applied_at INTEGER;
UPDATE confirmations SET applied_at = decided_at WHERE status <> 'pending';
CREATE INDEX confirmations_unapplied ON confirmations (decided_at) WHERE status <> 'pending' AND applied_at IS NULL;
