-- The audit log (issue 22): one row per change made through the API or the
-- dashboard, written in the change's own transaction. The actor's name is
-- kept as it was then (a key may be renamed or revoked later); changes is a
-- JSON object {field: {old, new}} in which secrets show only "changed".
CREATE TABLE audit_log (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    actor_type    TEXT NOT NULL,
    actor_id      TEXT NOT NULL,
    actor_name    TEXT NOT NULL,
    action        TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id   TEXT NOT NULL,
    changes       TEXT NOT NULL,
    ip            TEXT NOT NULL,
    user_agent    TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);
-- A workspace's entries newest first, and the retention sweep.
CREATE INDEX audit_log_workspace ON audit_log (workspace_id, created_at, id);
CREATE INDEX audit_log_created ON audit_log (created_at);
