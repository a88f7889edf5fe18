-- A batch counted once however its INSERT ends, a server killed in the
-- middle of it included. Runs on ClickHouse 18.16 and current releases
-- alike; every statement is safe to run again.
--
-- An INSERT runs its table's views one after another (18.16: in the order
-- of their names): a server that dies in between leaves some rollups with
-- the batch and others without, and nothing makes them one step. So:
--
-- * This version's writers insert into clicks_in, a Null table (it keeps
--   nothing), whose views store the clicks (clicks_in_feed, into clicks)
--   and the rollups, and, last of all, the ids (zz_click_ids_feed, into
--   click_ids) with their batch (batch, a hash of the batch's ids). The
--   look-up before an INSERT finds the ids of batches whose every view
--   ran: a batch whose INSERT died before is not found, and is inserted
--   again whole.
-- * Each rollup row carries the fingerprint of the clicks it counts
--   (events, the sum of their ids' hashes; a column no query reads,
--   summed or kept as it comes by merges), and each INSERT its own number
--   (attempt, stored in clicks). On a cluster, where the tables are
--   replicated and insert_deduplicate is on, a table drops a block it
--   stored already; 18.16 does it for the views of a table that keeps no
--   blocks of its own (a Null table), not for those of a replicated one.
--   A view's block of a batch inserted again (the same clicks: the same
--   rows, fingerprints included) is dropped by its table if it has it,
--   while the block of clicks, never the same twice (attempt), is stored
--   (raw copies collapse, as before). So a batch inserted again adds to
--   each rollup exactly what the first INSERT did not. Two different
--   batches never make the same block, as their clicks differ.
--
-- A view's INSERT into its table does not run that table's views (18.16):
-- the views of clicks see only the rows a process of the previous version
-- still running inserts into clicks itself (rolled = 1; their ids reach
-- click_ids through click_ids_old_feed), and clicks_in has a view of its
-- own for every table that those of clicks feed. The rows of this
-- version's writers carry rolled = 2, which the views of clicks do not
-- count, so that no click would be counted by both on a release that runs
-- a view's table's views.
ALTER TABLE clicks ADD COLUMN attempt UInt64 DEFAULT 0;

ALTER TABLE clicks ADD COLUMN batch UInt64 DEFAULT 0;

-- A view writes every column of its table (18.16 fills in no default): each
-- table that gains a column has the view of clicks that feeds it replaced
-- by one that writes it, right after. An INSERT of a process of the
-- previous version running in between fails and is delivered again, as
-- that version handles it: the rollups its views had not fed yet may be
-- lost (docs/analytics.md).
ALTER TABLE click_ids ADD COLUMN batch UInt64 DEFAULT 0;

CREATE MATERIALIZED VIEW IF NOT EXISTS click_ids_old_feed TO click_ids AS
SELECT day, event_id, toUInt64(0) AS batch FROM clicks WHERE rolled != 2;

DROP TABLE IF EXISTS click_ids_feed;

ALTER TABLE link_days ADD COLUMN events UInt64 DEFAULT 0;

CREATE MATERIALIZED VIEW IF NOT EXISTS link_days_old_feed TO link_days AS
SELECT link_id, day, countState() AS clicks, maxState(time_us) AS last_us,
    uniqCombinedState(17)(visitor) AS visitors, uniqCombinedState(19)(visitor) AS visitors_exact,
    sum(cityHash64(event_id)) AS events
FROM clicks WHERE bot = 0 AND rolled = 1
GROUP BY link_id, day;

DROP TABLE IF EXISTS link_days_feed;

ALTER TABLE link_day_keys ADD COLUMN events UInt64 DEFAULT 0;

CREATE MATERIALIZED VIEW IF NOT EXISTS link_day_keys_old_feed TO link_day_keys AS
SELECT link_id, day, dk.1 AS dim, dk.2 AS key, count() AS clicks, sum(cityHash64(event_id)) AS events
FROM clicks
ARRAY JOIN [('country', country), ('device', device), ('browser', browser),
    ('referrer', if(referrer = '', 'direct', referrer))] AS dk
WHERE bot = 0 AND rolled = 1
GROUP BY link_id, day, dim, key;

DROP TABLE IF EXISTS link_day_keys_feed;

CREATE MATERIALIZED VIEW IF NOT EXISTS link_day_dims_old_feed TO link_day_keys AS
SELECT link_id, day, dk.1 AS dim, dk.2 AS key, count() AS clicks, sum(cityHash64(event_id)) AS events
FROM clicks
ARRAY JOIN [('city', city), ('os', os)] AS dk
WHERE bot = 0 AND rolled = 1 AND dims = 1
GROUP BY link_id, day, dim, key;

DROP TABLE IF EXISTS link_day_dims_feed;

ALTER TABLE qr_scans ADD COLUMN events UInt64 DEFAULT 0;

CREATE MATERIALIZED VIEW IF NOT EXISTS qr_scans_old_feed TO qr_scans AS
SELECT link_id, qr_id, count() AS scans, sum(cityHash64(event_id)) AS events
FROM clicks WHERE bot = 0 AND rolled = 1 AND qr_id != ''
GROUP BY link_id, qr_id;

DROP TABLE IF EXISTS qr_scans_feed;

ALTER TABLE workspace_days ADD COLUMN events UInt64 DEFAULT 0;

CREATE MATERIALIZED VIEW IF NOT EXISTS workspace_days_old_feed TO workspace_days AS
SELECT workspace_id, day, count() AS clicks, sum(cityHash64(event_id)) AS events
FROM clicks WHERE bot = 0 AND rolled = 1
GROUP BY workspace_id, day;

DROP TABLE IF EXISTS workspace_days_feed;

ALTER TABLE workspace_day_keys ADD COLUMN events UInt64 DEFAULT 0;

CREATE MATERIALIZED VIEW IF NOT EXISTS workspace_day_keys_old_feed TO workspace_day_keys AS
SELECT workspace_id, day, dk.1 AS dim, dk.2 AS key, link_id, count() AS clicks, sum(cityHash64(event_id)) AS events
FROM clicks
ARRAY JOIN [('country', country), ('city', city), ('device', device), ('browser', browser), ('os', os),
    ('referrer', if(referrer = '', 'direct', referrer))] AS dk
WHERE bot = 0 AND rolled = 1 AND dims = 1
GROUP BY workspace_id, day, dim, key, link_id;

DROP TABLE IF EXISTS workspace_day_keys_feed;

CREATE TABLE IF NOT EXISTS clicks_in (
    event_id     FixedString(16),
    time_us      Int64,
    day          Date,
    link_id      String,
    workspace_id String,
    domain       String,
    slug         String,
    target       String,
    country      String,
    city         String,
    device       String,
    browser      String,
    os           String,
    referrer     String,
    trigger      String,
    qr_id        String,
    bot          UInt8,
    visitor      FixedString(16),
    rolled       UInt8,
    dims         UInt8,
    attempt      UInt64,
    batch        UInt64
) ENGINE = Null();

CREATE MATERIALIZED VIEW IF NOT EXISTS clicks_in_feed TO clicks AS
SELECT event_id, time_us, day, link_id, workspace_id, domain, slug, target, country, city, device,
    browser, os, referrer, trigger, qr_id, bot, visitor, rolled, dims, attempt, batch
FROM clicks_in;

CREATE MATERIALIZED VIEW IF NOT EXISTS link_days_feed2 TO link_days AS
SELECT link_id, day, countState() AS clicks, maxState(time_us) AS last_us,
    uniqCombinedState(17)(visitor) AS visitors, uniqCombinedState(19)(visitor) AS visitors_exact,
    sum(cityHash64(event_id)) AS events
FROM clicks_in WHERE bot = 0 AND rolled = 2
GROUP BY link_id, day;

-- The keys of the six dimensions in one view (0002 and 0004 had two).
CREATE MATERIALIZED VIEW IF NOT EXISTS link_day_keys_feed2 TO link_day_keys AS
SELECT link_id, day, dk.1 AS dim, dk.2 AS key, count() AS clicks, sum(cityHash64(event_id)) AS events
FROM clicks_in
ARRAY JOIN [('country', country), ('city', city), ('device', device), ('browser', browser), ('os', os),
    ('referrer', if(referrer = '', 'direct', referrer))] AS dk
WHERE bot = 0 AND rolled = 2 AND dims = 1
GROUP BY link_id, day, dim, key;

CREATE MATERIALIZED VIEW IF NOT EXISTS qr_scans_feed2 TO qr_scans AS
SELECT link_id, qr_id, count() AS scans, sum(cityHash64(event_id)) AS events
FROM clicks_in WHERE bot = 0 AND rolled = 2 AND qr_id != ''
GROUP BY link_id, qr_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS workspace_days_feed2 TO workspace_days AS
SELECT workspace_id, day, count() AS clicks, sum(cityHash64(event_id)) AS events
FROM clicks_in WHERE bot = 0 AND rolled = 2
GROUP BY workspace_id, day;

CREATE MATERIALIZED VIEW IF NOT EXISTS workspace_day_keys_feed2 TO workspace_day_keys AS
SELECT workspace_id, day, dk.1 AS dim, dk.2 AS key, link_id, count() AS clicks, sum(cityHash64(event_id)) AS events
FROM clicks_in
ARRAY JOIN [('country', country), ('city', city), ('device', device), ('browser', browser), ('os', os),
    ('referrer', if(referrer = '', 'direct', referrer))] AS dk
WHERE bot = 0 AND rolled = 2 AND dims = 1
GROUP BY workspace_id, day, dim, key, link_id;

-- A view's INSERT into its table does not run that table's views: those
-- of clicks see the previous version's rows only, and clicks_in has its
-- own for the tables they feed.
CREATE MATERIALIZED VIEW IF NOT EXISTS workspace_clicks_feed2 TO workspace_clicks AS
SELECT workspace_id, bot, day, time_us, event_id FROM clicks_in;

CREATE MATERIALIZED VIEW IF NOT EXISTS workspace_links_feed2 TO workspace_links AS
SELECT DISTINCT workspace_id, link_id FROM clicks_in WHERE bot = 0;

-- Last of clicks_in's views (by name).
CREATE MATERIALIZED VIEW IF NOT EXISTS zz_click_ids_feed TO click_ids AS
SELECT day, event_id, batch FROM clicks_in
