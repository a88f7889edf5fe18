-- The webhook generation: one row whose counter moves in the transaction of
-- every change of a webhook (create, update, delete, disabled after failures).
-- The click pipeline reads it once per batch and reads the subscriptions of
-- its workspaces again when it moved, so that a webhook receives every click
-- made after its creation answered.
CREATE TABLE webhook_generation (
    id         INT PRIMARY KEY CHECK (id = 1),
    generation BIGINT NOT NULL
);
INSERT INTO webhook_generation (id, generation) VALUES (1, 0);
