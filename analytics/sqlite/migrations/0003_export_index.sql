-- A link's chunks by day and first click, for the click export
-- (Store.ExportClicks), which reads them in time order.
CREATE INDEX click_chunks_link_day ON click_chunks (link_id, day, first_us);
