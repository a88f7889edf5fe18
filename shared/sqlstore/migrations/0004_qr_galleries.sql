-- Saved QR codes and link-in-bio galleries with their items.

-- A code with link_id is dynamic: its address is its link's short URL with
-- ?qr={id}, made when it is read, and url is ''. scan_count is written by the
-- click pipeline only, like links.click_count.
CREATE TABLE qr_codes (
    id               TEXT PRIMARY KEY,
    workspace_id     TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name             TEXT NOT NULL,
    url              TEXT NOT NULL,
    link_id          TEXT REFERENCES links (id) ON DELETE CASCADE,
    size             INT NOT NULL,
    foreground_color TEXT NOT NULL,
    background_color TEXT NOT NULL,
    corner_radius    INT NOT NULL,
    error_correction TEXT NOT NULL,
    scan_count       BIGINT NOT NULL DEFAULT 0,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
CREATE INDEX qr_codes_workspace_created ON qr_codes (workspace_id, created_at);
CREATE INDEX qr_codes_link ON qr_codes (link_id);

CREATE TABLE galleries (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    domain       TEXT NOT NULL,
    slug         TEXT NOT NULL,
    title        TEXT,
    bio          TEXT,
    avatar_url   TEXT,
    theme        TEXT NOT NULL,
    custom_css   TEXT,
    social_links TEXT NOT NULL DEFAULT '[]',
    is_published BOOLEAN NOT NULL DEFAULT FALSE,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    UNIQUE (domain, slug)
);
CREATE INDEX galleries_workspace_created ON galleries (workspace_id, created_at);

-- link_id is the short link a link item's clicks go through; owns_link says
-- the gallery made it for the item (and archives it with the item).
CREATE TABLE gallery_items (
    id            TEXT PRIMARY KEY,
    gallery_id    TEXT NOT NULL REFERENCES galleries (id) ON DELETE CASCADE,
    type          TEXT NOT NULL,
    title         TEXT,
    url           TEXT,
    icon_name     TEXT,
    thumbnail_url TEXT,
    embed_type    TEXT,
    embed_data    TEXT,
    position      INT NOT NULL,
    link_id       TEXT REFERENCES links (id) ON DELETE SET NULL,
    owns_link     BOOLEAN NOT NULL DEFAULT FALSE,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX gallery_items_gallery ON gallery_items (gallery_id, position);
