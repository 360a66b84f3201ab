-- What replicas need to recover each other's work. A cancel request is stored,
-- so an executor that missed the cancel message sees it when it renews its
-- lease; a decision records when it was applied to its run, so a decision that
-- no replica acted on (the deciding one died, or the message was lost) is found
-- by the sweep and acted on.
ALTER TABLE runs ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;
ALTER TABLE confirmations ADD COLUMN applied_at timestamptz;
-- Decisions taken before this migration count as applied: whether their runs
-- continued is not known, and continuing a run twice is worse than not at all.
UPDATE confirmations SET applied_at = decided_at WHERE status <> 'pending';
-- UnappliedDecisions scans only decided confirmations not yet applied.
CREATE INDEX confirmations_unapplied ON confirmations (decided_at) WHERE status <> 'pending' AND applied_at IS NULL;
