-- Import jobs (issue 23): a file another product exported, read in the
-- background by a control plane that holds the job's lease. position is how
-- many rows of the file were consumed; it moves on in the transaction that
-- writes those rows' links and report lines, so that a job taken over after
-- a crash goes on from there and never creates a link twice.
CREATE TABLE import_jobs (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    source        TEXT NOT NULL,
    file_name     TEXT NOT NULL,
    file_size     BIGINT NOT NULL,
    on_conflict   TEXT NOT NULL,
    mapping       TEXT,
    status        TEXT NOT NULL,
    total_rows    BIGINT NOT NULL DEFAULT 0,
    read_rows     BIGINT NOT NULL DEFAULT 0,
    created_links BIGINT NOT NULL DEFAULT 0,
    skipped_rows  BIGINT NOT NULL DEFAULT 0,
    failed_rows   BIGINT NOT NULL DEFAULT 0,
    position      BIGINT NOT NULL DEFAULT 0,
    error         TEXT,
    lease_owner   TEXT,
    lease_until   BIGINT,
    created_by    TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    finished_at   BIGINT
);
CREATE INDEX import_jobs_workspace ON import_jobs (workspace_id, created_at);
CREATE INDEX import_jobs_status ON import_jobs (status, created_at);

-- The uploaded file, base64 (TEXT in both dialects), until its job ends.
CREATE TABLE import_files (
    job_id TEXT PRIMARY KEY REFERENCES import_jobs (id) ON DELETE CASCADE,
    data   TEXT NOT NULL
);

-- Every row a job skipped or could not import, with why; seq is the row's
-- place in the file (0-based), so a batch written again after a crash
-- cannot add a line twice.
CREATE TABLE import_report (
    job_id  TEXT NOT NULL REFERENCES import_jobs (id) ON DELETE CASCADE,
    seq     BIGINT NOT NULL,
    line    BIGINT NOT NULL,
    outcome TEXT NOT NULL,
    domain  TEXT NOT NULL,
    slug    TEXT NOT NULL,
    reason  TEXT NOT NULL,
    PRIMARY KEY (job_id, seq)
);

-- The click totals an export carried (Shlink visits, YOURLS clicks, Bitly
-- totals): clickCount adds them; no breakdown holds them.
ALTER TABLE links ADD COLUMN imported_clicks BIGINT NOT NULL DEFAULT 0;
