-- click_rollup gains two dimensions, 'city' and 'os', which the writer adds
-- to from this version on. The link-days clicked before are listed here;
-- Store.fillDims counts their cities and operating systems from their chunks
-- (which hold every event) when the store opens, a few hundred link-days per
-- transaction, replacing the rows of those two dimensions whole (so a fill
-- cut short, or a link-day clicked again meanwhile, is counted right when it
-- goes on), and deletes each link-day from the list as it is counted.
CREATE TABLE click_dims_pending (
    link_id TEXT NOT NULL,
    day     TEXT NOT NULL,
    PRIMARY KEY (link_id, day)
) WITHOUT ROWID;

INSERT INTO click_dims_pending (link_id, day)
SELECT DISTINCT link_id, day FROM click_chunks WHERE humans > 0;

-- A workspace's human clicks per dimension, UTC day and key (counts), and
-- per key the sum over its link-days of the key's share of the link-day's
-- distinct visitors in thousandths (shares: stats.Share, visitors × key
-- clicks / day clicks), both in keyCounts' encoding; dim 'total' holds the
-- day's clicks and the sum of its link-days' visitors under key ''. Workspace
-- analytics over every link of a workspace read 30 rows for 30 days here,
-- whatever the number of links; the writer keeps them (a link-day's shares
-- move by the difference of its shares before and after), and Store.fillDims
-- adds the link-days listed above whole.
CREATE TABLE click_workspace_rollup (
    workspace_id TEXT NOT NULL,
    dim          TEXT NOT NULL,
    day          TEXT NOT NULL,
    counts       BLOB NOT NULL,
    shares       BLOB NOT NULL,
    PRIMARY KEY (workspace_id, dim, day)
) WITHOUT ROWID;
