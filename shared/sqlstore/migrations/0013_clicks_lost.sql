-- The gap between a limited link's click-limit ledger (the clicks charged in
-- link_limit_shards plus links.click_limit_used) and click_count (the clicks
-- the analytics pipeline stored), as last found settled: the clicks a crash
-- lost between the charge and the store. The click pipeline's check counts
-- each rise of it once in shortlink_clicks_lost_total, whichever process or
-- replica finds it (it moves the value with a compare-and-set).
ALTER TABLE links ADD COLUMN clicks_lost BIGINT NOT NULL DEFAULT 0;
