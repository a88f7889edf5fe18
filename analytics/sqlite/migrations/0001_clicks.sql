-- The embedded analytics tables, beside the control plane's in the same SQLite
-- file. Times are Unix microseconds; day is the UTC date of time (YYYY-MM-DD),
-- the unit of the stats ranges.
CREATE TABLE clicks (
    event_id     TEXT PRIMARY KEY,
    time         BIGINT NOT NULL,
    day          TEXT NOT NULL,
    link_id      TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    domain       TEXT NOT NULL,
    slug         TEXT NOT NULL,
    target       TEXT NOT NULL,
    country      TEXT NOT NULL,
    city         TEXT NOT NULL,
    device       TEXT NOT NULL,
    browser      TEXT NOT NULL,
    os           TEXT NOT NULL,
    referrer     TEXT NOT NULL,
    "trigger"    TEXT NOT NULL,
    qr_id        TEXT NOT NULL,
    bot          BOOLEAN NOT NULL,
    visitor      TEXT NOT NULL
);
-- A link's stats over a range of days, humans only (bot = FALSE); the end of a
-- link's humans holds its latest click.
CREATE INDEX clicks_link_day ON clicks (link_id, bot, day, time);
-- A workspace's human clicks since a time, answered from the index alone.
CREATE INDEX clicks_workspace_time ON clicks (workspace_id, bot, time);
