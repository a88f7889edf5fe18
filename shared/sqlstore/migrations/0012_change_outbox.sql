-- The change outbox: one row per change the edges must apply (a link, a
-- gallery page or a custom domain to forget), written in the transaction of
-- the write that causes it, then published to the bus by the control plane's
-- relay, which leases rows (lease_owner, lease_until) so that control planes
-- sharing the database do not publish the same rows at once, and deletes
-- each once published.
CREATE TABLE change_outbox (
    id          TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    link_id     TEXT NOT NULL,
    domain      TEXT NOT NULL,
    slug        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT
);
CREATE INDEX change_outbox_created ON change_outbox (created_at);
