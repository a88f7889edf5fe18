-- Workspace analytics that name links (a tag, domain or link filter, and
-- groupBy link, tag, domain or utm_*) read the links' rows of click_days and
-- click_rollup: a row per link and day, 30,000 rows for a tag on 1,000 links
-- over 30 days, 250 ms and more on SQLite. This table holds the same numbers
-- per workspace, dimension (and 'total') and UTC day, split over 8 shards by
-- link (Store's linkShard): every link-day of the shard in one row (data:
-- linkSections' encoding, by link id: the link-day's clicks and visitors as
-- click_days holds them and, but for 'total', its keys' clicks as
-- click_rollup holds them). A query reads 8 rows a day whatever the number of
-- links, and skips the sections of the links it does not name. The writer
-- replaces the sections of the link-days it counts; a small batch rewrites
-- the shards of its links only.
CREATE TABLE click_workspace_links (
    workspace_id TEXT NOT NULL,
    dim          TEXT NOT NULL,
    day          TEXT NOT NULL,
    shard        INTEGER NOT NULL,
    data         BLOB NOT NULL,
    PRIMARY KEY (workspace_id, dim, day, shard)
) WITHOUT ROWID;

-- The workspace-days clicked before this version: Store.fillLinks builds
-- their rows above from click_days and click_rollup when the store opens
-- (after fillDims, which completes click_rollup), one workspace-day per
-- transaction, deleting it from this list; the writer leaves the rows of a
-- workspace-day listed here alone.
CREATE TABLE click_links_pending (
    workspace_id TEXT NOT NULL,
    day          TEXT NOT NULL,
    PRIMARY KEY (workspace_id, day)
) WITHOUT ROWID;

INSERT INTO click_links_pending (workspace_id, day)
SELECT DISTINCT workspace_id, day FROM click_chunks WHERE humans > 0;
