-- Custom domains: why the latest verification failed, a listing index, and
-- one verified owner per name.
ALTER TABLE domains ADD COLUMN last_error TEXT;

CREATE INDEX domains_workspace_created ON domains (workspace_id, created_at);

-- Before this migration nothing kept two workspaces from both verifying a
-- name: should that have happened, the earliest verification keeps it.
UPDATE domains SET verified = FALSE, verified_at = NULL
WHERE verified = TRUE AND EXISTS (
    SELECT 1 FROM domains earlier
    WHERE earlier.name = domains.name AND earlier.verified = TRUE AND earlier.id <> domains.id
      AND (COALESCE(earlier.verified_at, 0) < COALESCE(domains.verified_at, 0)
           OR (COALESCE(earlier.verified_at, 0) = COALESCE(domains.verified_at, 0) AND earlier.id < domains.id))
);

-- A name is verified by one workspace at most: of two verifying at once, the
-- second write fails on this index (the store answers DOMAIN_EXISTS).
CREATE UNIQUE INDEX domains_verified_name ON domains (name) WHERE verified = TRUE;
