-- Rollups: what the stats, the usage count and the counters read instead of
-- the raw clicks, kept up to date at write time by materialized views. Runs
-- on ClickHouse 18.16 and current releases alike. Every statement is safe to
-- run again (IF NOT EXISTS; the ALTER's "column already exists" is taken as
-- done by the migration runner): a migration cut short is run again whole.
--
-- Which clicks a view counts is a property of the row, not of when it was
-- inserted: rolled = 1 marks the rows a rollup-aware writer (WriteClicks from
-- this migration on) inserted, and only those feed the views. Rows inserted
-- before this migration, or by a process of the previous version still
-- running meanwhile, keep rolled = 0 (the column's default, which old parts
-- read too); Store.fillLegacy counts them into click_backfill and the
-- visitor states of link_days, as absolute values that running it again, or
-- twice at once, cannot count twice. So no click is counted by both, and
-- none by neither, whatever inserts run while the migration does. No
-- rolled = 1 row exists before every view below does: a writer inserts only
-- after its Open applied and recorded this whole migration.
--
-- The views see each INSERT's rows once, so a rollup counts an event once if
-- it is inserted once: WriteClicks makes sure of that (see clicks.go).
ALTER TABLE clicks ADD COLUMN rolled UInt8 DEFAULT 0;

-- A link's human clicks per UTC day: how many (clicks), the latest
-- (last_us), and its distinct visitors twice over:
--
-- visitors_exact is uniqCombined(19): it keeps the 64-bit CityHash64 of every
-- visitor (exact: two of 10,000 visitors share a hash with a probability
-- near 3·10⁻¹²) up to 2^14 = 16,384 of them on current releases (2^15 on
-- 18.16), then turns into a HyperLogLog of 2^19 registers.
-- visitors is uniqCombined(17): a HyperLogLog of 2^17 registers beyond 4,096
-- visitors (8,192 on 18.16), bias-corrected on every release (17 is the one
-- precision ClickHouse keeps its correction table for; at other precisions,
-- 18.16 measured up to +2.6 % around 2.5·2^K visitors), within 0.6 % of the
-- truth in every trial on 18.16 from 10,000 to 1,000,000 visitors.
--
-- The stats read visitors, which is cheap (finalizing its state takes about
-- 0.07 ms), and read visitors_exact only for the days where visitors says
-- fewer than Store's exactVisitors (12,000): exact up to there. A single
-- uniqCombined cannot do both: on current releases its exact stage holds
-- 2^(K-5) hashes, so exactness up to 10,000 needs K = 19, whose 2^19
-- registers take 4 ms to merge and 0.3 ms to finalize per day on 18.16, and
-- whose own estimate is not bias-corrected.
--
-- States are large (up to 393 KB for visitors_exact), and ClickHouse reads a
-- granule's rows whole: 16 rows to a granule keeps a query of one link's
-- days from decoding many of its neighbours'.
CREATE TABLE IF NOT EXISTS link_days (
    link_id        String,
    day            Date,
    clicks         AggregateFunction(count),
    last_us        AggregateFunction(max, Int64),
    visitors       AggregateFunction(uniqCombined(17), FixedString(16)),
    visitors_exact AggregateFunction(uniqCombined(19), FixedString(16))
) ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (link_id, day)
SETTINGS index_granularity = 16;

CREATE MATERIALIZED VIEW IF NOT EXISTS link_days_feed TO link_days AS
SELECT link_id, day, countState() AS clicks, maxState(time_us) AS last_us,
    uniqCombinedState(17)(visitor) AS visitors, uniqCombinedState(19)(visitor) AS visitors_exact
FROM clicks WHERE bot = 0 AND rolled = 1
GROUP BY link_id, day;

-- A link's human clicks per UTC day and key of each breakdown: dim is
-- country, device, browser or referrer ('direct' for none). A link's range of
-- days is one stretch of the key.
CREATE TABLE IF NOT EXISTS link_day_keys (
    link_id String,
    day     Date,
    dim     String,
    key     String,
    clicks  UInt64
) ENGINE = SummingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (link_id, day, dim, key);

CREATE MATERIALIZED VIEW IF NOT EXISTS link_day_keys_feed TO link_day_keys AS
SELECT link_id, day, dk.1 AS dim, dk.2 AS key, count() AS clicks
FROM clicks
ARRAY JOIN [('country', country), ('device', device), ('browser', browser),
    ('referrer', if(referrer = '', 'direct', referrer))] AS dk
WHERE bot = 0 AND rolled = 1
GROUP BY link_id, day, dim, key;

-- Human scans of each dynamic QR code, per link (a code of another link,
-- passed on by the edge, counts for neither).
CREATE TABLE IF NOT EXISTS qr_scans (
    link_id String,
    qr_id   String,
    scans   UInt64
) ENGINE = SummingMergeTree()
ORDER BY (link_id, qr_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS qr_scans_feed TO qr_scans AS
SELECT link_id, qr_id, count() AS scans
FROM clicks WHERE bot = 0 AND rolled = 1 AND qr_id != ''
GROUP BY link_id, qr_id;

-- A workspace's human clicks per UTC day, for the usage count: the whole
-- days after its start come from here, the day it starts in from
-- workspace_clicks.
CREATE TABLE IF NOT EXISTS workspace_days (
    workspace_id String,
    day          Date,
    clicks       UInt64
) ENGINE = SummingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (workspace_id, day);

CREATE MATERIALIZED VIEW IF NOT EXISTS workspace_days_feed TO workspace_days AS
SELECT workspace_id, day, count() AS clicks
FROM clicks WHERE bot = 0 AND rolled = 1
GROUP BY workspace_id, day;

-- The counts of the clicks with rolled = 0, written by Store.fillLegacy as
-- absolute numbers (uniqExact of the event ids), never added to: a row
-- written twice holds the same number, or a larger one once more such clicks
-- arrived, so every reader takes max(clicks) per row key, and
-- ReplacingMergeTree keeps that row when it merges. scope 'link' (id a link):
-- dim 'total' (key ''), country, device, browser, referrer, and 'qr' (key
-- the code); scope 'workspace' (id a workspace): dim 'total'.
CREATE TABLE IF NOT EXISTS click_backfill (
    scope  String,
    id     String,
    dim    String,
    day    Date,
    key    String,
    clicks UInt64
) ENGINE = ReplacingMergeTree(clicks)
ORDER BY (scope, id, dim, day, key);

-- One row per run of Store.fillLegacy: the highest block number of clicks'
-- parts when it started. A store that opens looks for legacy clicks in
-- parts above it only (a merge of counted rows into such a part has them
-- counted again: harmless).
CREATE TABLE IF NOT EXISTS click_backfill_runs (
    max_block UInt64,
    at        DateTime
) ENGINE = MergeTree()
ORDER BY at
