-- darkroom ledger: a run that follows its input folder (`darkroom run --follow`), as
-- `darkroom status` and the live display show it: "following since 08:02 · last new photo
-- 10:41 · 3 settling". One row, the latest following run's; a file still settling is not
-- recorded anywhere else (it is not a photo yet: the next run finds it again).
-- Append new numbered files; never edit this one once it has landed.
CREATE TABLE follow_state (
  id           INTEGER PRIMARY KEY CHECK (id = 1),
  -- the process following, as the run lock names it: shown only while that process holds the lock
  pid          INTEGER NOT NULL,
  -- how new files are noticed: 'events' (the file system's) or 'poll' (a scan every poll_ms)
  how          TEXT    NOT NULL CHECK (how IN ('events', 'poll')),
  poll_ms      INTEGER NOT NULL,
  since_ms     INTEGER NOT NULL,
  -- the latest photo recorded while following (NULL: none yet)
  last_new_ms  INTEGER,
  -- files seen and not yet taken: still changing, or not decoding yet
  settling     INTEGER NOT NULL DEFAULT 0,
  -- set when the run stops following (NULL: following, or killed)
  ended_ms     INTEGER
);
