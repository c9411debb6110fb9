-- darkroom ledger: the job's step list as part of each photo's identity (issue 12, point 6),
-- and uploads the service forgot (point 7).
-- Append new numbered files; never edit this one once it has landed.

-- Every step list a run of this ledger followed, once: its signature (the first 16 hex digits
-- of the SHA-256 of the steps' canonical JSON, src/config/steps.ts) and the list itself, so
-- a message can name the old steps after the job file has changed.
CREATE TABLE step_lists (
  sig       TEXT    PRIMARY KEY,
  -- canonical JSON: an array of steps, each with every field it sets, keys sorted
  steps     TEXT    NOT NULL,
  first_ms  INTEGER NOT NULL
);

-- The step list a photo follows (in progress) or was finished under (done). NULL: not yet
-- stamped (a photo found by this run, or one from a ledger older than this migration).
ALTER TABLE items ADD COLUMN steps_sig TEXT;
-- Times the service answered a create of this photo's own upload with "parameter invalid"
-- (400/-2): it had forgotten the image, which was uploaded again.
ALTER TABLE items ADD COLUMN forgotten_uploads INTEGER NOT NULL DEFAULT 0;
-- The step list each task was created under (a photo redone under new steps keeps the
-- tasks of the old ones on record; its sidecar lists only the new ones).
ALTER TABLE attempts ADD COLUMN steps_sig TEXT;
-- The step list each file darkroom wrote came from: a photo redone under new steps has the
-- files of the old ones that the new ones do not overwrite removed once its new output is in place.
ALTER TABLE output_files ADD COLUMN steps_sig TEXT;

CREATE INDEX items_steps_sig ON items (steps_sig, state);
