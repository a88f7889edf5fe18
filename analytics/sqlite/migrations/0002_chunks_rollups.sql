-- The click store keeps every click, but not as one row each: a row per link,
-- UTC day and written batch (a chunk) holds the batch's events of that link
-- and day in click's binary record format (click.AppendRecord). Statistics
-- come from rollups added to as the clicks are written, never from the raw
-- clicks. The clicks table of 0001 is converted by the store when it opens
-- (Store.convertLegacy), through the same write path, then dropped.

-- Every click. day is the UTC date (YYYY-MM-DD) of every event in the chunk;
-- first_us and last_us bound their times (Unix microseconds); humans counts
-- the chunk's events that are not bots. Only the usage count (ClicksSince)
-- reads chunks, on the one day where its start falls.
CREATE TABLE click_chunks (
    id           INTEGER PRIMARY KEY,
    link_id      TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    day          TEXT NOT NULL,
    first_us     BIGINT NOT NULL,
    last_us      BIGINT NOT NULL,
    events       INTEGER NOT NULL,
    humans       INTEGER NOT NULL,
    data         BLOB NOT NULL
);
CREATE INDEX click_chunks_workspace_day ON click_chunks (workspace_id, day);

-- A link's human clicks and distinct visitors per UTC day: visitors is the
-- count the stats add up; sketch holds the visitors themselves, exactly up to
-- 10,000 (sorted 64-bit hashes) and as a HyperLogLog beyond.
CREATE TABLE click_days (
    link_id  TEXT NOT NULL,
    day      TEXT NOT NULL,
    clicks   BIGINT NOT NULL,
    visitors BIGINT NOT NULL,
    sketch   BLOB NOT NULL,
    PRIMARY KEY (link_id, day)
) WITHOUT ROWID;

-- A link's human clicks per dimension ('country', 'device', 'browser',
-- 'referrer' with 'direct' for none) and UTC day, every key of the day in
-- one row (counts: keyCounts' encoding). A breakdown over 30 days reads 30
-- rows, however long the tail of referrers.
CREATE TABLE click_rollup (
    link_id TEXT NOT NULL,
    dim     TEXT NOT NULL,
    day     TEXT NOT NULL,
    counts  BLOB NOT NULL,
    PRIMARY KEY (link_id, dim, day)
) WITHOUT ROWID;

-- The latest human click of every link ever clicked, deleted links included
-- (links.last_clicked_at is the control plane's copy for the links it has).
CREATE TABLE click_link_last (
    link_id TEXT PRIMARY KEY,
    last_us BIGINT NOT NULL
) WITHOUT ROWID;

-- Human clicks per workspace and UTC day, for the usage count.
CREATE TABLE click_workspace_days (
    workspace_id TEXT NOT NULL,
    day          TEXT NOT NULL,
    clicks       BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, day)
) WITHOUT ROWID;

-- The event ids stored, as ranges: an id is 8 bytes naming the process that
-- made it (source) and an 8-byte sequence number (click.NewEventID), so one
-- process's clicks collapse into a few ranges [lo, hi] of sequence numbers
-- (stored as signed 64-bit integers). A redelivered event falls in a range.
CREATE TABLE click_seen (
    source BLOB NOT NULL,
    lo     BIGINT NOT NULL,
    hi     BIGINT NOT NULL,
    PRIMARY KEY (source, lo)
) WITHOUT ROWID;
