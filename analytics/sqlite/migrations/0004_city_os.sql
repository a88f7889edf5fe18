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
