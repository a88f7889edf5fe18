-- A link's clickLimit, split over shard rows so that concurrent clicks do not
-- all wait on one row lock (and not on the links row, which API writes need).
-- Shard i may charge quota - used more clicks. A link has shard rows exactly
-- when it has a clickLimit, and sum(quota) = max(click_limit, sum(used)): the
-- clicks charged can never pass the limit, and at the limit every shard is used
-- up. The store keeps that up when a clickLimit is set, changed or removed.
CREATE TABLE link_limit_shards (
    link_id TEXT NOT NULL REFERENCES links (id) ON DELETE CASCADE,
    shard   INT NOT NULL,
    quota   BIGINT NOT NULL,
    used    BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (link_id, shard),
    CHECK (used >= 0 AND used <= quota)
);

-- Eight shards (the store's limitShards) per limited link: shard 0 takes what
-- was used so far, and what is left of the limit is shared out evenly, the
-- remainder one each to the first shards. CASE stands in for GREATEST, which
-- SQLite lacks.
INSERT INTO link_limit_shards (link_id, shard, quota, used)
SELECT l.id, s.n,
    CASE WHEN s.n = 0 THEN l.click_limit_used ELSE 0 END
    + CASE WHEN l.click_limit > l.click_limit_used
        THEN (l.click_limit - l.click_limit_used) / 8
            + CASE WHEN s.n < (l.click_limit - l.click_limit_used) % 8 THEN 1 ELSE 0 END
        ELSE 0 END,
    CASE WHEN s.n = 0 THEN l.click_limit_used ELSE 0 END
FROM links l CROSS JOIN (
    SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3
    UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7
) s
WHERE l.click_limit IS NOT NULL;

-- links.click_limit_used now only parks the use of a link whose limit was
-- removed (its shards dropped), for when a limit is set again: the shards
-- hold the use of limited links.
UPDATE links SET click_limit_used = 0 WHERE click_limit IS NOT NULL;
