-- Sealed days read by link, and today sealed too (issue 21 point 1). Runs
-- on ClickHouse 18.16 and current releases alike; every statement is safe
-- to run again.
--
-- workspace_shares is ordered by dimension and key first: a dimension of a
-- few hundred links named (a tag, a domain) read the sealed rows of every
-- link of the workspace for the range (1.2 million rows for country over 30
-- days at 10M clicks) to keep theirs. The same rows ordered by dimension
-- and link, in small granules, let it read the links' own: Store.Seal
-- writes each per-link row to both, and a query naming up to 200 links
-- with a dimension (no key filter) reads this copy (Store's copyLinks). The dimension comes before
-- the link because 18.16 narrows the columns after one read with IN (the
-- links) no further: ordered by link first, a link's rows of every
-- dimension were read (measured: 11,000 rows a link for its 2,300 of
-- country); so a link's rows of the dimension are read for every day of
-- the partitions (months) of the range.
CREATE TABLE IF NOT EXISTS workspace_link_shares (
    workspace_id String,
    dim          String,
    link_id      String,
    day          Date,
    key          String,
    gen          UInt64,
    clicks       Int64,
    milli        Int64
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (workspace_id, dim, link_id, day, key, gen)
SETTINGS index_granularity = 256;

-- The seals from this migration on (workspace_seals' generations have no
-- rows in workspace_link_shares: their days are sealed again, once). A
-- seal's clicks are the clicks its rows count. A finished day is answered
-- from its seal while they are the workspace's clicks of the day. Today
-- (and a day over for less than an hour) is sealed too, every minute or so
-- while it is read, link by link: a link whose clicks changed while it was
-- sealed is left out, and a query reads from workspace_day_keys only the
-- links whose clicks differ from their seal's, their sealed rows taken off
-- the seal's sums.
CREATE TABLE IF NOT EXISTS workspace_day_seals (
    workspace_id String,
    day          Date,
    gen          UInt64,
    clicks       Int64
) ENGINE = ReplacingMergeTree(gen)
ORDER BY (workspace_id, day)
