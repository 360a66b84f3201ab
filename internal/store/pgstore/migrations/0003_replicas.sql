-- Liveness is one heartbeat per replica, not one lease per run: at a thousand
-- runs, per-run renewals were hundreds of writes a second competing with the
-- event log. A replica registers a term (its id and a new epoch) and renews
-- only that row; a run names the term executing it (lease_owner,
-- lease_epoch) and is orphaned once that term has ended (a newer epoch) or
-- lapsed (alive_until passed).
CREATE TABLE replicas (
    id          text PRIMARY KEY,
    epoch       bigint NOT NULL,
    alive_until timestamptz NOT NULL
);
DROP INDEX runs_by_lease;
ALTER TABLE runs DROP COLUMN lease_until;
ALTER TABLE runs ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0;
-- OrphanedRuns and CancelRequests look at executing runs by their term.
CREATE INDEX runs_by_executor ON runs (lease_owner, lease_epoch) WHERE status IN ('queued', 'running');
-- A tenant's cap on executing runs (StartRun's MaxExecuting) counts these.
CREATE INDEX runs_executing_by_tenant ON runs (tenant) WHERE status IN ('queued', 'running');
-- The highest seq the run's executor may publish before writing it to the
-- log: a replica ending the run after a crash continues after it, so no seq
-- a client may have seen is given to another event.
ALTER TABLE runs ADD COLUMN seq_reserved bigint NOT NULL DEFAULT 0;
