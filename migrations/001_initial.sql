-- darkroom ledger, version 1. Times are integer milliseconds since the epoch (_ms).
-- Append new numbered files; never edit this one once it has landed.

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- One row per input photo. `state` is the item's place in the lifecycle of
-- src/ledger/transitions.ts; `due_ms` is when the scheduler may next act on it
-- (retry backoff, or the next poll of an active task).
CREATE TABLE items (
  id             INTEGER PRIMARY KEY,
  rel_path       TEXT    NOT NULL UNIQUE,
  src_path       TEXT    NOT NULL,
  size_bytes     INTEGER,
  content_hash   TEXT,
  state          TEXT    NOT NULL,
  step_index     INTEGER NOT NULL DEFAULT 0,
  attempt        INTEGER NOT NULL DEFAULT 0,
  key_fp         TEXT,
  image_url      TEXT,
  input_url      TEXT,
  task_id        TEXT,
  business_type  TEXT,
  task_started_ms INTEGER,
  result_url     TEXT,
  output_path    TEXT,
  reason         TEXT,
  request_id     TEXT,
  due_ms         INTEGER NOT NULL DEFAULT 0,
  retries        INTEGER NOT NULL DEFAULT 0,
  created_ms     INTEGER NOT NULL,
  updated_ms     INTEGER NOT NULL
);
CREATE INDEX items_state_key_due ON items (state, key_fp, due_ms);
CREATE INDEX items_state_due ON items (state, due_ms);
CREATE INDEX items_output_path ON items (output_path);

-- L1: a create submission is written as 'sending' with the X-Request-Id before the
-- request leaves, and resolved to accepted / rejected / ambiguous after.
CREATE TABLE submissions (
  id                  INTEGER PRIMARY KEY,
  item_id             INTEGER NOT NULL REFERENCES items (id),
  step_index          INTEGER NOT NULL,
  capability          TEXT    NOT NULL,
  key_fp              TEXT    NOT NULL,
  request_id          TEXT    NOT NULL UNIQUE,
  state               TEXT    NOT NULL CHECK (state IN ('sending', 'accepted', 'rejected', 'ambiguous')),
  task_id             TEXT,
  business_type       TEXT,
  response_request_id TEXT,
  http_status         INTEGER,
  code                INTEGER,
  error               TEXT,
  sent_ms             INTEGER NOT NULL,
  resolved_ms         INTEGER
);
CREATE INDEX submissions_state ON submissions (state);
CREATE INDEX submissions_item ON submissions (item_id);

-- Every task created for an item's step, and what became of it.
CREATE TABLE attempts (
  id             INTEGER PRIMARY KEY,
  item_id        INTEGER NOT NULL REFERENCES items (id),
  submission_id  INTEGER NOT NULL REFERENCES submissions (id),
  step_index     INTEGER NOT NULL,
  capability     TEXT    NOT NULL,
  attempt        INTEGER NOT NULL,
  task_id        TEXT    NOT NULL,
  business_type  TEXT    NOT NULL,
  status         TEXT    NOT NULL,
  polls          INTEGER NOT NULL DEFAULT 0,
  -- the last poll that still saw the task running: latency lies between it and the
  -- first poll that saw it terminal, which is how polling learns task latency
  last_running_ms INTEGER,
  wait_hint_ms   INTEGER,
  result_url     TEXT,
  reason         TEXT,
  started_ms     INTEGER NOT NULL,
  ended_ms       INTEGER
);
CREATE INDEX attempts_item ON attempts (item_id);

-- L3: every authenticated call. The call windows are computed from this table, so a
-- restart inherits the budget already spent. The key itself is never stored: key_fp
-- is a hash prefix.
CREATE TABLE calls (
  id              INTEGER PRIMARY KEY,
  at_ms           INTEGER NOT NULL,
  key_fp          TEXT    NOT NULL,
  method          TEXT    NOT NULL,
  endpoint        TEXT    NOT NULL,
  http_status     INTEGER,
  code            INTEGER,
  request_id      TEXT,
  sent_request_id TEXT    NOT NULL,
  duration_ms     INTEGER NOT NULL,
  error           TEXT
);
CREATE INDEX calls_key_at ON calls (key_fp, at_ms);

-- Every state change of an item, for status, the report and post-mortems.
CREATE TABLE transitions (
  id         INTEGER PRIMARY KEY,
  item_id    INTEGER NOT NULL REFERENCES items (id),
  at_ms      INTEGER NOT NULL,
  from_state TEXT,
  to_state   TEXT    NOT NULL,
  note       TEXT
);
CREATE INDEX transitions_item ON transitions (item_id);
CREATE INDEX transitions_to_at ON transitions (to_state, at_ms);
