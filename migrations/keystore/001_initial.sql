-- darkroom key store, version 1 (issue 12): one file per API key on this machine, named by
-- the key's fingerprint (k_…, a SHA-256 prefix), never the key. Every darkroom process
-- using the key (runs of any ledger, credits, usage, plan) shares its call windows, its
-- task slots and its pause through it. Times are integer milliseconds since the epoch.
-- Append new numbered files; never edit this one once it has landed.

-- Every call made with the key, written BEFORE the request is sent and completed after:
-- a row without an answer (a call in flight, or one whose process was killed) counts as
-- spent. The rolling windows are counted from at_ms.
CREATE TABLE calls (
  id              INTEGER PRIMARY KEY,
  -- when it left: the reservation, moved to the moment of sending if that came later
  at_ms           INTEGER NOT NULL,
  -- the ledger's id (meta 'owner_id'), an account command's one-off id, or 'foreign'
  owner           TEXT    NOT NULL,
  -- upload | create | poll | account | foreign (calls of other clients, seen from the service)
  endpoint        TEXT    NOT NULL,
  -- which windows it counts in: foreign calls known only from an hour figure or a minute
  -- 429 count in that window alone
  counts_in       TEXT    NOT NULL DEFAULT 'both' CHECK (counts_in IN ('both', 'minute', 'hour')),
  sent_request_id TEXT,
  answered_ms     INTEGER,
  http_status     INTEGER,
  code            INTEGER
);
CREATE INDEX calls_at ON calls (at_ms);
CREATE INDEX calls_sent ON calls (sent_request_id);

-- The key's task slots: one row per create in flight, task running, or create whose
-- outcome is unknown (held: it may be running at the service).
CREATE TABLE slots (
  id         INTEGER PRIMARY KEY,
  owner      TEXT    NOT NULL,
  -- the owner's ledger item, when there is one
  item_id    INTEGER,
  -- the task id (active, or an orphan task), the create's X-Request-Id (held), null in flight
  ref        TEXT,
  -- released: a held slot the service showed free, or the operator's `retry --held` freed;
  -- kept (not counted) so a restart does not count it again
  kind       TEXT    NOT NULL CHECK (kind IN ('create', 'active', 'held', 'released')),
  -- the latest moment its task could have started (a create in flight: its send plus the
  -- call timeout; a held one: when the client gave up on it; a running task: its acceptance)
  since_ms   INTEGER NOT NULL,
  -- since_ms plus how long a task may run (src/scheduler/taskBound.ts): a held row counts
  -- until then, and so do the rows of an owner that is gone (its tasks still hold the
  -- service's slots until they end)
  expires_ms INTEGER NOT NULL
);
CREATE INDEX slots_owner ON slots (owner, ref);

-- Who owns rows: a live owner's create and active rows count in full (it tracks them).
CREATE TABLE owners (
  owner      TEXT    PRIMARY KEY,
  pid        INTEGER NOT NULL,
  host       TEXT    NOT NULL,
  started_ms INTEGER NOT NULL
);

-- A pause the service asked for on this key (Retry-After, RateLimit-Reset): every process waits it out.
CREATE TABLE pause (
  id       INTEGER PRIMARY KEY CHECK (id = 1),
  until_ms INTEGER NOT NULL,
  at_ms    INTEGER NOT NULL
);

-- Small facts about the key on this machine, e.g. 'seeded_ms': when a run last read the
-- key's usage from the service (GET /usage), so runs started together ask once.
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
