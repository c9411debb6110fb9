-- darkroom ledger: a person's review of each output (darkroom review), and the rejected
-- outputs kept aside when their photos are redone (darkroom retry --rejected).
-- Append new numbered files; never edit this one once it has landed.

-- The decision that stands for each photo: accepted or rejected, about one output (its
-- SHA-256 as written, output_files.sha256). A photo whose output is no longer that one (redone,
-- its content changed) is not reviewed, whatever this row says. No row: not reviewed.
CREATE TABLE reviews (
  item_id        INTEGER PRIMARY KEY REFERENCES items (id),
  decision       TEXT    NOT NULL CHECK (decision IN ('accept', 'reject')),
  output_sha256  TEXT,
  output_path    TEXT,
  -- the person's few words on a rejection (NULL: none given)
  reason         TEXT,
  at_ms          INTEGER NOT NULL
);
CREATE INDEX reviews_decision ON reviews (decision);

-- Every decision ever made, in order, never changed: accept, reject, clear (the decision
-- taken back), redo (retry --rejected sent the photo back; `mode` the mode it asked for,
-- NULL for the job's own steps). The latest redo's mode is the one the photo's creates use.
CREATE TABLE review_log (
  id             INTEGER PRIMARY KEY,
  item_id        INTEGER NOT NULL REFERENCES items (id),
  action         TEXT    NOT NULL CHECK (action IN ('accept', 'reject', 'clear', 'redo')),
  output_sha256  TEXT,
  reason         TEXT,
  mode           TEXT,
  at_ms          INTEGER NOT NULL
);
CREATE INDEX review_log_item ON review_log (item_id, action);

-- A rejected output kept aside by retry --rejected (it was paid for: never deleted), under a
-- name that says so, `<name>.rejected-<first 8 hex of its SHA-256>.<ext>` beside where it was.
CREATE TABLE rejected_outputs (
  path           TEXT    PRIMARY KEY,
  item_id        INTEGER NOT NULL REFERENCES items (id),
  -- the output's own name, which the redone output takes
  from_path      TEXT    NOT NULL,
  sha256         TEXT,
  reason         TEXT,
  kept_ms        INTEGER NOT NULL
);
CREATE INDEX rejected_outputs_item ON rejected_outputs (item_id);
