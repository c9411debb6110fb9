-- darkroom ledger: the counts `status` shows, kept up to date by the ledger itself, so that
-- reading them costs the same at a million photos as at ten: photos by state and step, calls
-- by key and endpoint, tasks by capability, the capability of each step. Each count is changed
-- by a trigger in the very transaction that changes what it counts, so it can never drift from
-- the rows; a ledger opened read-only before this migration is counted from its rows as before.
-- Append new numbered files; never edit this one once it has landed.

-- Photos (items) per state and step: what `SELECT state, step_index, COUNT(*) FROM items GROUP
-- BY state, step_index` gives, without reading every item.
CREATE TABLE item_counts (
  state      TEXT    NOT NULL,
  step_index INTEGER NOT NULL,
  n          INTEGER NOT NULL,
  PRIMARY KEY (state, step_index)
) WITHOUT ROWID;
INSERT INTO item_counts (state, step_index, n) SELECT state, step_index, COUNT(*) FROM items GROUP BY state, step_index;

CREATE TRIGGER item_counts_insert AFTER INSERT ON items BEGIN
  INSERT INTO item_counts (state, step_index, n) VALUES (new.state, new.step_index, 1)
    ON CONFLICT (state, step_index) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER item_counts_delete AFTER DELETE ON items BEGIN
  UPDATE item_counts SET n = n - 1 WHERE state = old.state AND step_index = old.step_index;
END;
CREATE TRIGGER item_counts_update AFTER UPDATE OF state, step_index ON items
  WHEN old.state IS NOT new.state OR old.step_index IS NOT new.step_index BEGIN
  UPDATE item_counts SET n = n - 1 WHERE state = old.state AND step_index = old.step_index;
  INSERT INTO item_counts (state, step_index, n) VALUES (new.state, new.step_index, 1)
    ON CONFLICT (state, step_index) DO UPDATE SET n = n + 1;
END;

-- Calls per key, method and endpoint, with how many were refused (429) or failed at the
-- service (5xx). The ledger's calls are only ever appended.
CREATE TABLE call_counts (
  key_fp        TEXT    NOT NULL,
  method        TEXT    NOT NULL,
  endpoint      TEXT    NOT NULL,
  n             INTEGER NOT NULL,
  limited       INTEGER NOT NULL,
  server_errors INTEGER NOT NULL,
  PRIMARY KEY (key_fp, method, endpoint)
) WITHOUT ROWID;
INSERT INTO call_counts (key_fp, method, endpoint, n, limited, server_errors)
  SELECT key_fp, method, endpoint, COUNT(*), SUM(http_status = 429), SUM(http_status >= 500) FROM calls GROUP BY key_fp, method, endpoint;

CREATE TRIGGER call_counts_insert AFTER INSERT ON calls BEGIN
  INSERT INTO call_counts (key_fp, method, endpoint, n, limited, server_errors)
    VALUES (new.key_fp, new.method, new.endpoint, 1, new.http_status IS 429, COALESCE(new.http_status >= 500, 0))
    ON CONFLICT (key_fp, method, endpoint) DO UPDATE SET n = n + 1, limited = limited + excluded.limited,
      server_errors = server_errors + excluded.server_errors;
END;

-- Tasks per capability, as the progress figures read them (ledger/read/progress.ts): those
-- that ended SUCCESS and the sum of their latencies (the midpoint of the poll interval that saw
-- each end), the creates' waitTime hints, and the tasks that ended FAIL. An attempt's row is
-- changed as its task is polled: its old share is taken off and its new one added.
CREATE TABLE attempt_counts (
  capability  TEXT    PRIMARY KEY,
  succeeded   INTEGER NOT NULL,
  latency_sum REAL    NOT NULL,
  hinted      INTEGER NOT NULL,
  hint_sum    REAL    NOT NULL,
  failed      INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO attempt_counts (capability, succeeded, latency_sum, hinted, hint_sum, failed)
  SELECT capability,
         SUM(status = 'SUCCESS' AND ended_ms IS NOT NULL),
         COALESCE(SUM(CASE WHEN status = 'SUCCESS' AND ended_ms IS NOT NULL
           THEN ((COALESCE(last_running_ms, started_ms) - started_ms) + (ended_ms - started_ms)) / 2.0 END), 0),
         SUM(wait_hint_ms IS NOT NULL AND wait_hint_ms > 0),
         COALESCE(SUM(CASE WHEN wait_hint_ms > 0 THEN wait_hint_ms END), 0),
         SUM(status = 'FAIL')
  FROM attempts GROUP BY capability;

CREATE TRIGGER attempt_counts_insert AFTER INSERT ON attempts BEGIN
  INSERT INTO attempt_counts (capability, succeeded, latency_sum, hinted, hint_sum, failed)
    VALUES (new.capability,
            new.status = 'SUCCESS' AND new.ended_ms IS NOT NULL,
            CASE WHEN new.status = 'SUCCESS' AND new.ended_ms IS NOT NULL
              THEN ((COALESCE(new.last_running_ms, new.started_ms) - new.started_ms) + (new.ended_ms - new.started_ms)) / 2.0 ELSE 0 END,
            COALESCE(new.wait_hint_ms > 0, 0),
            CASE WHEN new.wait_hint_ms > 0 THEN new.wait_hint_ms ELSE 0 END,
            new.status = 'FAIL')
    ON CONFLICT (capability) DO UPDATE SET succeeded = succeeded + excluded.succeeded, latency_sum = latency_sum + excluded.latency_sum,
      hinted = hinted + excluded.hinted, hint_sum = hint_sum + excluded.hint_sum, failed = failed + excluded.failed;
END;
CREATE TRIGGER attempt_counts_delete AFTER DELETE ON attempts BEGIN
  UPDATE attempt_counts SET
    succeeded = succeeded - (old.status = 'SUCCESS' AND old.ended_ms IS NOT NULL),
    latency_sum = latency_sum - CASE WHEN old.status = 'SUCCESS' AND old.ended_ms IS NOT NULL
      THEN ((COALESCE(old.last_running_ms, old.started_ms) - old.started_ms) + (old.ended_ms - old.started_ms)) / 2.0 ELSE 0 END,
    hinted = hinted - COALESCE(old.wait_hint_ms > 0, 0),
    hint_sum = hint_sum - CASE WHEN old.wait_hint_ms > 0 THEN old.wait_hint_ms ELSE 0 END,
    failed = failed - (old.status = 'FAIL')
  WHERE capability = old.capability;
END;
CREATE TRIGGER attempt_counts_update AFTER UPDATE OF capability, status, started_ms, last_running_ms, ended_ms, wait_hint_ms ON attempts BEGIN
  UPDATE attempt_counts SET
    succeeded = succeeded - (old.status = 'SUCCESS' AND old.ended_ms IS NOT NULL),
    latency_sum = latency_sum - CASE WHEN old.status = 'SUCCESS' AND old.ended_ms IS NOT NULL
      THEN ((COALESCE(old.last_running_ms, old.started_ms) - old.started_ms) + (old.ended_ms - old.started_ms)) / 2.0 ELSE 0 END,
    hinted = hinted - COALESCE(old.wait_hint_ms > 0, 0),
    hint_sum = hint_sum - CASE WHEN old.wait_hint_ms > 0 THEN old.wait_hint_ms ELSE 0 END,
    failed = failed - (old.status = 'FAIL')
  WHERE capability = old.capability;
  INSERT INTO attempt_counts (capability, succeeded, latency_sum, hinted, hint_sum, failed)
    VALUES (new.capability,
            new.status = 'SUCCESS' AND new.ended_ms IS NOT NULL,
            CASE WHEN new.status = 'SUCCESS' AND new.ended_ms IS NOT NULL
              THEN ((COALESCE(new.last_running_ms, new.started_ms) - new.started_ms) + (new.ended_ms - new.started_ms)) / 2.0 ELSE 0 END,
            COALESCE(new.wait_hint_ms > 0, 0),
            CASE WHEN new.wait_hint_ms > 0 THEN new.wait_hint_ms ELSE 0 END,
            new.status = 'FAIL')
    ON CONFLICT (capability) DO UPDATE SET succeeded = succeeded + excluded.succeeded, latency_sum = latency_sum + excluded.latency_sum,
      hinted = hinted + excluded.hinted, hint_sum = hint_sum + excluded.hint_sum, failed = failed + excluded.failed;
END;

-- The capability each step index ran as: the first by name of those its creates were made for
-- (`SELECT step_index, MIN(capability) FROM submissions GROUP BY step_index`).
CREATE TABLE step_capabilities (
  step_index INTEGER PRIMARY KEY,
  capability TEXT    NOT NULL
);
INSERT INTO step_capabilities (step_index, capability) SELECT step_index, MIN(capability) FROM submissions GROUP BY step_index;

CREATE TRIGGER step_capabilities_insert AFTER INSERT ON submissions BEGIN
  INSERT INTO step_capabilities (step_index, capability) VALUES (new.step_index, new.capability)
    ON CONFLICT (step_index) DO UPDATE SET capability = MIN(capability, excluded.capability);
END;

-- Outputs whose input's metadata did not reach them (`status` counts and lists them, by path):
-- few, found without reading every file's row.
CREATE INDEX output_files_meta_note ON output_files (path) WHERE kind = 'output' AND meta_note IS NOT NULL;

-- Items by state in id order: the problems `status` lists (failed, held, skipped: the first 200
-- of each by id) are read from the front of each state, not sorted out of all of them.
CREATE INDEX items_state ON items (state);
