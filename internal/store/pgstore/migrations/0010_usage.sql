-- Usage accounting: one record per model a run called, written in the
-- transaction that records the run's end (UpdateRun). Records outlive
-- their runs and conversations: deleting a conversation does not refund
-- its tokens. cost is in nano-units (1e-9) of currency, priced when each
-- call was made.
CREATE TABLE usage_records (
    run_id              text NOT NULL,
    provider            text NOT NULL,
    model               text NOT NULL,
    tenant              text NOT NULL,
    user_id             text NOT NULL,
    agent_id            text NOT NULL,
    engine              text NOT NULL,
    conversation_id     text NOT NULL,
    calls               bigint NOT NULL,
    input_tokens        bigint NOT NULL,
    output_tokens       bigint NOT NULL,
    reasoning_tokens    bigint NOT NULL,
    cached_input_tokens bigint NOT NULL,
    estimated           boolean NOT NULL,
    cost                bigint NOT NULL,
    currency            text NOT NULL,
    at                  timestamptz NOT NULL,
    PRIMARY KEY (run_id, provider, model)
);
CREATE INDEX usage_by_tenant ON usage_records (tenant, at);
CREATE INDEX usage_by_user ON usage_records (tenant, user_id, at);
CREATE INDEX usage_by_agent ON usage_records (tenant, agent_id, at);

-- Runs per minute: the runs a tenant (a user, an agent) started lately.
CREATE INDEX runs_by_tenant_start ON runs (tenant, created_at);
