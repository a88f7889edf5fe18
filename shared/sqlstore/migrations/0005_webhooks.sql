-- Webhooks and their outbox: one row per message and webhook, written in the
-- transaction of the change that caused it, then delivered by a dispatcher
-- that leases due rows (lease_owner, lease_until), so that each attempt is
-- made by exactly one control plane and a dead one's rows are taken over.
CREATE TABLE webhooks (
    id                   TEXT PRIMARY KEY,
    workspace_id         TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name                 TEXT NOT NULL,
    url                  TEXT NOT NULL,
    events               TEXT NOT NULL,
    secret               TEXT NOT NULL,
    is_active            BOOLEAN NOT NULL DEFAULT TRUE,
    consecutive_failures INT NOT NULL DEFAULT 0,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL
);
CREATE INDEX webhooks_workspace ON webhooks (workspace_id, created_at);

CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    webhook_id       TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    workspace_id     TEXT NOT NULL,
    message_id       TEXT NOT NULL,
    event            TEXT NOT NULL,
    payload          TEXT NOT NULL,
    status           TEXT NOT NULL,
    attempts         INT NOT NULL DEFAULT 0,
    response_status  INT,
    response_time_ms INT,
    response_body    TEXT,
    error            TEXT,
    created_at       BIGINT NOT NULL,
    last_attempt_at  BIGINT,
    next_attempt_at  BIGINT,
    lease_owner      TEXT,
    lease_until      BIGINT,
    -- A message reaches a webhook once, however often it is enqueued (click
    -- messages are enqueued again when the bus redelivers their batch).
    UNIQUE (webhook_id, message_id)
);
-- The dispatcher's scan: pending rows by due time.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at);
