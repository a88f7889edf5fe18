-- Fair webhook delivery. The circuit breaker of each webhook lives in its
-- row, so that every dispatcher on the database sees it: unreachable_attempts
-- counts attempts in a row that got no answer (timeouts, refused
-- connections), breaker_opens how often in a row the breaker opened (its
-- cool-down doubles with each), paused_until the end of the cool-down (NULL:
-- closed; in the past: one probe may be made).
ALTER TABLE webhooks ADD COLUMN unreachable_attempts INT NOT NULL DEFAULT 0;
ALTER TABLE webhooks ADD COLUMN breaker_opens INT NOT NULL DEFAULT 0;
ALTER TABLE webhooks ADD COLUMN paused_until BIGINT;
-- The claim ranks each webhook's due deliveries by due time (its line), and
-- counts each webhook's deliveries in flight (leased): both read pending rows
-- per webhook.
CREATE INDEX webhook_deliveries_line ON webhook_deliveries (webhook_id, next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (lease_until, webhook_id) WHERE lease_until IS NOT NULL;
