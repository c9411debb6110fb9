-- darkroom ledger, version 2: what kind of hold an item is in, and result-URL refreshes.
-- Append new numbered files; never edit this one once it has landed.

-- Why a held item is held, so `retry --held` and `onAmbiguous: resubmit` can treat the two
-- kinds differently: 'ambiguous' (a create whose outcome is unknown: resending may charge
-- twice) or 'timeout' (the task outlived the polling cap: it may still finish, so a retry
-- polls it again before anything is created anew). NULL when the item is not held.
ALTER TABLE items ADD COLUMN hold_kind TEXT CHECK (hold_kind IN ('ambiguous', 'timeout'));

-- Result URLs of this task that expired before they could be downloaded (403/404/410 from
-- the result host); each one was answered by a fresh poll for a new URL.
ALTER TABLE attempts ADD COLUMN url_refreshes INTEGER NOT NULL DEFAULT 0;

-- Held items with their kind, for `status` and `retry --held` (existing rows: a held item
-- whose current task is known outlived the polling cap; one without a task is ambiguous).
UPDATE items SET hold_kind = CASE WHEN task_id IS NULL THEN 'ambiguous' ELSE 'timeout' END WHERE state = 'held';
