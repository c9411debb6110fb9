-- 004: indexes for `darkroom status` on a big ledger (issue 3: 100,000 items, under 0.5 s).
--
-- Measured on the bench's ledger (100,000 items, 130,000 calls):
-- - items by (state, step_index): the per-step and per-state counts of `status` were a
--   scan of the items table and a sort (60–85 ms); through this covering index, 15 ms.
-- - calls by endpoint: the count of uploads and of account calls was a scan of the calls
--   table (~50 ms); by index range, ~2 ms.
-- Each costs one index entry per write: a state move, a logged call (at most 100 a minute a key).

CREATE INDEX items_state_step ON items (state, step_index);
CREATE INDEX calls_endpoint ON calls (endpoint);
