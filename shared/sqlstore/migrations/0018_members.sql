-- People (issue 22): users sign in with an email and a password (argon2id)
-- and belong to workspaces as members with a role; invites bring them in.
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE TABLE members (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role         TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX members_user ON members (user_id);
-- An invite's token is kept only as its SHA-256 hash; accepting deletes it.
CREATE TABLE invites (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    email        TEXT NOT NULL,
    role         TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    expires_at   BIGINT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX invites_workspace ON invites (workspace_id, created_at, id);
-- Dashboard sessions of people (signed in with a password): as
-- dashboard_sessions, but acting for a user in one workspace at a time. A
-- session is live only while the user is a member of its workspace: it is
-- read joined with members, so a removed member's sessions stop at once.
CREATE TABLE user_sessions (
    id_hash      TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL,
    csrf_token   TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);
CREATE INDEX user_sessions_user ON user_sessions (user_id);
CREATE INDEX user_sessions_expires ON user_sessions (expires_at);
-- Wrong passwords per account at the dashboard's sign-in (its lockout),
-- counted as password_tries counts the edge's, in a table of their own: the
-- edge's sweep of password_tries follows the edge's window, not this one.
CREATE TABLE signin_tries (
    try_key      TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    tries        BIGINT NOT NULL
);
CREATE INDEX signin_tries_window ON signin_tries (window_start);
