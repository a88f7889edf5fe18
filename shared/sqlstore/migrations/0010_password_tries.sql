-- Password tries at the edge, for its lockout: every edge of a deployment
-- counts in this one table. A row counts the tries of one key (a link and a
-- client, or a link over all clients) since window_start (Unix microseconds);
-- the first try after the window ends starts a new one.
CREATE TABLE password_tries (
    try_key      TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    tries        BIGINT NOT NULL
);
CREATE INDEX password_tries_window ON password_tries (window_start);
