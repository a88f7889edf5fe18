-- The click events and what answers the stats from them. Runs on ClickHouse
-- 18.16 (Debian's) and current releases alike: no DateTime64, Bool,
-- LowCardinality, codecs or TTL, which 18.16 lacks or hides behind settings.
-- ClickHouse has no transactions: every statement must be safe to run again
-- (IF NOT EXISTS), as a migration cut short, or run by two starters at once,
-- is run again whole.

-- One row per click event. time_us is Unix microseconds: DateTime keeps
-- seconds only and 18.16 has no DateTime64. day is the UTC date of time_us,
-- the unit of the stats ranges, computed by the writer. event_id and visitor
-- are the events' 16 bytes (hex(event_id) shows them): not UUID, as 18.16's
-- uniqExact on a UUID column slows down with the square of the rows (2 s for
-- 100k), where on FixedString it takes milliseconds.
--
-- ORDER BY serves the stats: a link's human clicks over a range of days are
-- one contiguous run of the primary key (link_id, bot = 0, day BETWEEN …),
-- and so are the ids WriteClicks looks up before it inserts. event_id ends
-- the key so that ReplacingMergeTree collapses a redelivered event (the same
-- link, bot flag and day) when it merges parts. Merges happen whenever
-- ClickHouse likes, so the queries never count rows: they count distinct
-- event ids, exact before and after a merge.
CREATE TABLE IF NOT EXISTS clicks (
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
    visitor      FixedString(16)
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (link_id, bot, day, event_id);

-- The same events keyed by workspace, for the usage count (ClicksSince),
-- which would otherwise read every link's clicks of the period. Filled by the
-- view below on every insert into clicks; deduplicated the same way.
CREATE TABLE IF NOT EXISTS workspace_clicks (
    workspace_id String,
    bot          UInt8,
    day          Date,
    time_us      Int64,
    event_id     FixedString(16)
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (workspace_id, bot, day, event_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS workspace_clicks_feed TO workspace_clicks AS
SELECT workspace_id, bot, day, time_us, event_id FROM clicks;
