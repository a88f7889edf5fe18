-- The control plane's tables. Written once for SQLite and PostgreSQL alike:
-- times are Unix microseconds (BIGINT), lists and maps are JSON text.
CREATE TABLE workspaces (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    plan       TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX workspaces_name ON workspaces (name, created_at);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    key_hash     TEXT NOT NULL UNIQUE,
    permissions  TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX api_keys_workspace ON api_keys (workspace_id, created_at);

CREATE TABLE domains (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    verified     BOOLEAN NOT NULL DEFAULT FALSE,
    verified_at  BIGINT,
    token        TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    UNIQUE (workspace_id, name)
);
CREATE INDEX domains_name ON domains (name);

CREATE TABLE links (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    domain          TEXT NOT NULL,
    slug            TEXT NOT NULL,
    destination_url TEXT NOT NULL,
    title           TEXT,
    description     TEXT,
    tags            TEXT NOT NULL DEFAULT '[]',
    password_hash   TEXT NOT NULL DEFAULT '',
    expires_at      BIGINT,
    expired_url     TEXT,
    click_limit     BIGINT,
    click_count     BIGINT NOT NULL DEFAULT 0,
    geo_targets     TEXT,
    device_targets  TEXT,
    ios_url         TEXT,
    android_url     TEXT,
    utm_source      TEXT,
    utm_medium      TEXT,
    utm_campaign    TEXT,
    utm_term        TEXT,
    utm_content     TEXT,
    is_archived     BOOLEAN NOT NULL DEFAULT FALSE,
    last_clicked_at BIGINT,
    created_by      TEXT NOT NULL DEFAULT '',
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    UNIQUE (domain, slug)
);
CREATE INDEX links_workspace_created ON links (workspace_id, created_at);
CREATE INDEX links_workspace_updated ON links (workspace_id, updated_at);
CREATE INDEX links_workspace_clicks ON links (workspace_id, click_count);

CREATE TABLE link_tags (
    link_id TEXT NOT NULL REFERENCES links (id) ON DELETE CASCADE,
    tag     TEXT NOT NULL,
    PRIMARY KEY (link_id, tag)
);
CREATE INDEX link_tags_tag ON link_tags (tag);
