-- A link's change is stored with the changes of every gallery page that shows
-- it (change outbox, migration 0012), found inside the write's transaction by
-- gallery_items.link_id: an index, so that every link write does not scan
-- every gallery's items while it holds its locks.
CREATE INDEX gallery_items_link ON gallery_items (link_id);
