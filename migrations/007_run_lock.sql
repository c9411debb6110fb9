-- darkroom ledger: the run lock (L6, one writer per ledger). It lives inside the ledger
-- itself, not in a file beside it: a symbolic link or a `..` path to the ledger reaches
-- this same row, since it is the same database (a hard link is refused before it is
-- opened: SQLite cannot find the journal through it). At most one row (id = 1).
-- Taken and taken over in one BEGIN IMMEDIATE transaction: SQLite lets one writer in at
-- a time, so of two runs racing for a stale lock exactly one replaces the row and the
-- other then finds a live holder. See src/ledger/lock.ts.

CREATE TABLE run_lock (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  -- random, per acquisition: release deletes the row only while it is still ours
  token       TEXT    NOT NULL,
  -- what holds it: 'run' or 'retry --held'
  command     TEXT    NOT NULL,
  pid         INTEGER NOT NULL,
  host        TEXT    NOT NULL,
  -- /proc/sys/kernel/random/boot_id, readlink /proc/self/ns/pid and the start time of
  -- /proc/<pid>/stat (NULL without /proc): a reused pid, a reboot or another container
  -- is never mistaken for the holder
  boot_id     TEXT,
  pid_ns      TEXT,
  proc_start  TEXT,
  started_ms  INTEGER NOT NULL
);
