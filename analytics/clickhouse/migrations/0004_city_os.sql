-- The breakdowns gain cities and operating systems (link_day_keys, dims
-- 'city' and 'os'), for the links' stats and workspace analytics. Runs on
-- ClickHouse 18.16 and current releases alike; every statement is safe to
-- run again.
--
-- As with rolled in 0002, which clicks the new view counts is a property of
-- the row: dims = 1 marks the rows a writer of this version inserted (after
-- its Open applied this whole migration), and only those feed it. The rows
-- with dims = 0 (every click stored before, and those a process of the
-- previous version inserts meanwhile) are counted by Store.fillDims into
-- click_backfill, as absolute numbers (uniqExact of the event ids) that
-- running it again, or twice at once, cannot count twice; readers already
-- add click_backfill's rows of every dimension to link_day_keys'.
ALTER TABLE clicks ADD COLUMN dims UInt8 DEFAULT 0;

CREATE MATERIALIZED VIEW IF NOT EXISTS link_day_dims_feed TO link_day_keys AS
SELECT link_id, day, dk.1 AS dim, dk.2 AS key, count() AS clicks
FROM clicks
ARRAY JOIN [('city', city), ('os', os)] AS dk
WHERE bot = 0 AND rolled = 1 AND dims = 1
GROUP BY link_id, day, dim, key;

-- One row per run of Store.fillDims: the highest block number of clicks'
-- parts when it started (as click_backfill_runs for fillLegacy).
CREATE TABLE IF NOT EXISTS click_dims_runs (
    max_block UInt64,
    at        DateTime
) ENGINE = MergeTree()
ORDER BY at
