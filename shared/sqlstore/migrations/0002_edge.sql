-- The edge's per-click write: clicks charged against a link's clickLimit, kept
-- apart from click_count (which only the analytics pipeline writes).
ALTER TABLE links ADD COLUMN click_limit_used BIGINT NOT NULL DEFAULT 0;

-- Secrets every process of a deployment shares (the visitor-hash and cookie key).
CREATE TABLE secrets (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
