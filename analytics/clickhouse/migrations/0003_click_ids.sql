-- The ids of the stored clicks, ordered by id alone, for WriteClicks's
-- look-up of a batch's ids before it inserts (a redelivery after a restart).
-- Runs on ClickHouse 18.16 and current releases alike; every statement is
-- safe to run again.
--
-- clicks cannot answer that look-up cheaply: its key starts with the link,
-- and a sparse index reads at least a granule (8,192 rows) per link and part
-- that the batch names, so a batch of 200 links read 1.3 million rows of a
-- 3-million-row table, and more as it grew. Here an event id is 8 bytes naming
-- the process that made it and a sequence number, so a batch's ids are a few
-- short runs of the key, at the end of each edge process's ids: the look-up
-- reads a granule or two per edge and part (1,024 rows each, 18 bytes a row),
-- whatever the size of the table or of the links.
--
-- Every row inserted into clicks once the view exists reaches click_ids
-- through it, bots and rows of the previous version (rolled = 0) included;
-- the rows already there are copied by Store.migrate after these
-- statements (copyClickIDs), before the migration is recorded.
-- ReplacingMergeTree collapses an id copied or inserted twice.
CREATE TABLE IF NOT EXISTS click_ids (
    day      Date,
    event_id FixedString(16)
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY event_id
SETTINGS index_granularity = 1024;

CREATE MATERIALIZED VIEW IF NOT EXISTS click_ids_feed TO click_ids AS
SELECT day, event_id FROM clicks
