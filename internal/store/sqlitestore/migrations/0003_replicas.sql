-- Mirrors pgstore's 0003_replicas.sql: liveness is one heartbeat per replica,
-- not one lease per run. A run names the replica term (id and epoch) that
-- executes it; it is orphaned once that term has ended or lapsed.
CREATE TABLE replicas (
    id          TEXT PRIMARY KEY,
    epoch       INTEGER NOT NULL,
    alive_until INTEGER NOT NULL
);
DROP INDEX runs_by_lease;
ALTER TABLE runs DROP COLUMN lease_until;
ALTER TABLE runs ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_by_executor ON runs (lease_owner, lease_epoch) WHERE status IN ('queued', 'running');
-- A tenant's cap on executing runs (StartRun's MaxExecuting) counts these.
CREATE INDEX runs_executing_by_tenant ON runs (tenant) WHERE status IN ('queued', 'running');
-- The highest seq the run's executor may publish before writing it to the
-- log: a replica ending the run after a crash continues after it, so no seq
-- a client may have seen is given to another event.
ALTER TABLE runs ADD COLUMN seq_reserved INTEGER NOT NULL DEFAULT 0;
-- EndConfirmations finds a run's confirmations (pgstore has had this index since 0001).
CREATE INDEX confirmations_by_run ON confirmations (run_id);
