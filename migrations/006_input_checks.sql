-- darkroom ledger: the verdict of each input's full decode, by content (issue 12, point 8).
-- Every input is decoded in full before any call is spent on it; the verdict is kept per
-- content hash, so a photo already checked is not decoded again on a rerun (a changed file
-- has a new hash and is checked anew). Issue 12 gives this part migration 010: renumber at
-- merge as the other parts land (it depends on no migration after 005).

CREATE TABLE input_checks (
  content_hash  TEXT    PRIMARY KEY,
  -- null: decoded whole; else why the file is refused (truncated, damaged, over the pixel limit)
  reason        TEXT,
  checked_ms    INTEGER NOT NULL
);
