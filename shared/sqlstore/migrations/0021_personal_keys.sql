-- Personal API keys and who made each link (issue 22, points 4 and 5).
--
-- A key made by a person signed in (or by one of their keys) belongs to
-- them: owner_user_id names the user (NULL for the workspace's keys, made
-- with keys:write or by shortlink admin). Such a key works only while its
-- owner is a member of its workspace, with at most the owner's role's
-- permissions (read joined with members on every request), and it is
-- deleted with the membership.
ALTER TABLE api_keys ADD COLUMN owner_user_id TEXT;
CREATE INDEX api_keys_owner ON api_keys (owner_user_id, workspace_id);
-- Who created a link and who changed it last, as the audit log names
-- actors: type (key, user, system), id and name at the time.
ALTER TABLE links ADD COLUMN author_type TEXT;
ALTER TABLE links ADD COLUMN author_id TEXT;
ALTER TABLE links ADD COLUMN author_name TEXT;
ALTER TABLE links ADD COLUMN editor_type TEXT;
ALTER TABLE links ADD COLUMN editor_id TEXT;
ALTER TABLE links ADD COLUMN editor_name TEXT;
-- Existing links: their author is the key (or, since 0018, the person)
-- created_by names; their last editor is not known.
UPDATE links SET
    author_type = CASE WHEN substr(created_by, 1, 4) = 'usr_' THEN 'user' ELSE 'key' END,
    author_id = created_by,
    author_name = COALESCE((SELECT k.name FROM api_keys k WHERE k.id = links.created_by),
                           (SELECT u.name FROM users u WHERE u.id = links.created_by), '')
WHERE created_by <> '';
