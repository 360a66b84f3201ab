-- Mirrors pgstore's 0010_usage.sql: one usage record per model a run
-- called, written with the run's end, kept after the run is deleted.
-- Times are Unix milliseconds; cost is in nano-units of currency.
CREATE TABLE usage_records (
    run_id              TEXT NOT NULL,
    provider            TEXT NOT NULL,
    model               TEXT NOT NULL,
    tenant              TEXT NOT NULL,
    user_id             TEXT NOT NULL,
    agent_id            TEXT NOT NULL,
    engine              TEXT NOT NULL,
    conversation_id     TEXT NOT NULL,
    calls               INTEGER NOT NULL,
    input_tokens        INTEGER NOT NULL,
    output_tokens       INTEGER NOT NULL,
    reasoning_tokens    INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL,
    estimated           INTEGER NOT NULL,
    cost                INTEGER NOT NULL,
    currency            TEXT NOT NULL,
    at                  INTEGER NOT NULL,
    PRIMARY KEY (run_id, provider, model)
);
CREATE INDEX usage_by_tenant ON usage_records (tenant, at);
CREATE INDEX usage_by_user ON usage_records (tenant, user_id, at);
CREATE INDEX usage_by_agent ON usage_records (tenant, agent_id, at);

CREATE INDEX runs_by_tenant_start ON runs (tenant, created_at);
