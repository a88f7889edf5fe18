-- Billing: the local processor's checkout sessions (paid on the control
-- plane's hosted test page) and the payment processor's subscriptions of each
-- workspace, kept so that a subscription's end moves its workspace back.
CREATE TABLE checkout_sessions (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    price_id     TEXT NOT NULL,
    plan         TEXT NOT NULL,
    success_url  TEXT NOT NULL DEFAULT '',
    cancel_url   TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    completed_at BIGINT
);
CREATE INDEX checkout_sessions_workspace ON checkout_sessions (workspace_id, created_at);

CREATE TABLE subscriptions (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    customer_id  TEXT NOT NULL DEFAULT '',
    price_id     TEXT NOT NULL,
    plan         TEXT NOT NULL,
    active       BOOLEAN NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX subscriptions_workspace ON subscriptions (workspace_id, active, created_at);
