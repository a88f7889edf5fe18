-- Workspace analytics (GET /analytics over a whole workspace) without
-- reading every link's rollups: a query of 1,000 links over 30 days read a
-- granule of link_day_keys (8,192 rows) per link and shared each link-day's
-- visitors among its keys at query time, seconds at 10M clicks. Runs on
-- ClickHouse 18.16 and current releases alike; every statement is safe to
-- run again.
--
-- The links that ever had a human click in each workspace, for the
-- workspace's sealing (below) and for the days it answers from the links'
-- rollups. Filled by the view for the rows inserted from now on; the rows
-- stored before are copied by Store.migrate after these statements
-- (fillWorkspaceLinks), before the migration is recorded.
CREATE TABLE IF NOT EXISTS workspace_links (
    workspace_id String,
    link_id      String
) ENGINE = ReplacingMergeTree()
ORDER BY (workspace_id, link_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS workspace_links_feed TO workspace_links AS
SELECT DISTINCT workspace_id, link_id FROM clicks WHERE bot = 0;

-- link_day_keys ordered by workspace and day first, for the days not
-- sealed yet (today, mostly): one day of a workspace's keys of a dimension
-- is one stretch of the key. Filled by the view from the rows inserted
-- once it exists (the clicks of the dims = 1 writers, as link_day_dims_feed);
-- a day is read from here only when every click of it was inserted after
-- the view was created (Store.keysSince, the day after the migration).
CREATE TABLE IF NOT EXISTS workspace_day_keys (
    workspace_id String,
    day          Date,
    dim          String,
    key          String,
    link_id      String,
    clicks       UInt64
) ENGINE = SummingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (workspace_id, day, dim, key, link_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS workspace_day_keys_feed TO workspace_day_keys AS
SELECT workspace_id, day, dk.1 AS dim, dk.2 AS key, link_id, count() AS clicks
FROM clicks
ARRAY JOIN [('country', country), ('city', city), ('device', device), ('browser', browser), ('os', os),
    ('referrer', if(referrer = '', 'direct', referrer))] AS dk
WHERE bot = 0 AND rolled = 1 AND dims = 1
GROUP BY workspace_id, day, dim, key, link_id;

-- Sealed days. Once a UTC day is over, Store.seal computes its workspace's
-- answer once: for every link of the workspace and every key of every
-- dimension, the clicks and the link-day's visitors shared among its keys
-- (stats.Share, in thousandths), as the queries would compute them, and
-- their sums over the links. dim 'total' (key '') holds each link-day's
-- clicks and visitors (milli = visitors × 1000).
--
-- gen names one computation (its start, in nanoseconds). The rows of a
-- computation are inserted before its seal, and a reader counts only the
-- rows of the generation its seal names: rows of a computation that failed
-- or was superseded are never counted. A day is answered from its seal
-- only while the seal's clicks equal the workspace's clicks of the day
-- (workspace_days): a click arriving late, after its day was sealed, makes
-- the day answered from the links' rollups again until it is sealed anew.
CREATE TABLE IF NOT EXISTS workspace_shares (
    workspace_id String,
    dim          String,
    key          String,
    day          Date,
    link_id      String,
    gen          UInt64,
    clicks       Int64,
    milli        Int64
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (workspace_id, dim, key, day, link_id, gen);

CREATE TABLE IF NOT EXISTS workspace_share_sums (
    workspace_id String,
    dim          String,
    day          Date,
    key          String,
    gen          UInt64,
    clicks       Int64,
    milli        Int64
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (workspace_id, dim, day, key, gen);

-- One row per sealed workspace-day: the generation whose rows answer it and
-- the workspace's clicks of the day they count. The latest seal wins.
CREATE TABLE IF NOT EXISTS workspace_seals (
    workspace_id String,
    day          Date,
    gen          UInt64,
    clicks       Int64
) ENGINE = ReplacingMergeTree(gen)
ORDER BY (workspace_id, day);

-- When workspace_day_keys started: the first day all of whose clicks its
-- view saw is the day after the earliest row here.
CREATE TABLE IF NOT EXISTS workspace_day_keys_start (
    at DateTime
) ENGINE = MergeTree()
ORDER BY at
